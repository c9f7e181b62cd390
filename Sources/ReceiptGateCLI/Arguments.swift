/// A mistake in how the command was called: printed as one line, exit code 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Asked for help: the text goes to stdout, exit code 0.
struct HelpRequested: Error {
    let text: String
}

/// `--name VALUE`, `--name=VALUE`, repeatable options and positional arguments.
struct Arguments {
    enum Kind { case single, repeated }

    private(set) var values: [String: [String]] = [:]
    private(set) var positionals: [String] = []

    init(_ arguments: [String], options: [String: Kind], help: String) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--help" || argument == "-h" { throw HelpRequested(text: help) }
            guard argument.hasPrefix("--") else {
                positionals.append(argument)
                continue
            }
            var name = String(argument.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let kind = options[name] else { throw UsageError("unknown option --\(name) (see --help)") }
            if value == nil {
                guard index < arguments.count else { throw UsageError("option --\(name) needs a value") }
                value = arguments[index]
                index += 1
            }
            if kind == .single && values[name] != nil { throw UsageError("option --\(name) given twice") }
            values[name, default: []].append(value!)
        }
    }

    func single(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String]? { values[name] }
    func has(_ name: String) -> Bool { values[name] != nil }

    func expectPositionals(_ names: [String]) throws -> [String] {
        guard positionals.count == names.count else {
            if positionals.count < names.count {
                throw UsageError("missing argument \(names[positionals.count].uppercased())")
            }
            throw UsageError("unexpected argument \"\(positionals[names.count])\"")
        }
        return positionals
    }
}
