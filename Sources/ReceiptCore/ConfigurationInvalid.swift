import Foundation

/// A setting with a bad value, naming the variable: the service and every provider stop start-up
/// with it (exit code 78), so one type serves them all.
public struct ConfigurationInvalid: Error, CustomStringConvertible, Sendable {
    public let variable: String
    public let problem: String

    public init(variable: String, problem: String) {
        self.variable = variable
        self.problem = problem
    }

    public var description: String { "\(variable): \(problem)" }
}

/// Reads settings from environment variables the same way everywhere: blank means unset.
public struct EnvironmentSettings: Sendable {
    public let environment: [String: String]

    public init(_ environment: [String: String]) { self.environment = environment }

    /// The trimmed value, or nil when absent or blank.
    public func value(_ name: String) -> String? {
        guard let raw = environment[name]?.trimmingCharacters(in: .whitespaces), !raw.isEmpty else { return nil }
        return raw
    }

    /// An http(s) URL with a host, without a trailing slash; `fallback` when unset.
    public func url(_ name: String, default fallback: String) throws -> String {
        guard let raw = value(name) else { return fallback }
        guard let parsed = URL(string: raw), ["http", "https"].contains(parsed.scheme?.lowercased() ?? ""),
            parsed.host != nil
        else {
            throw ConfigurationInvalid(variable: name, problem: "must be an http(s) URL, got \"\(raw)\"")
        }
        return raw.hasSuffix("/") ? String(raw.dropLast()) : raw
    }
}
