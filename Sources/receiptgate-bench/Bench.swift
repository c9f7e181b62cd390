import Foundation

/// Benchmarks run by hand (docs/benchmarks.md). Not a test: numbers depend on the machine.
/// `jws` is `JWSBench`, `verify` is `VerifyBench`.
@main
enum Bench {
    static func main() throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "verify" {
            arguments.removeFirst()
            try VerifyBench.run(arguments)
            return
        }
        guard arguments.first == "jws" else {
            print(
                """
                usage: receiptgate-bench jws [--root CERT] [--file TOKENS] [--seconds N] [--count N] [--write-corpus DIR] [--owned N]
                       receiptgate-bench verify --url URL --client-id ID --secret SECRET --file TOKENS [--concurrency N]
                """)
            exit(arguments.isEmpty || arguments.first == "--help" ? 0 : 2)
        }
        arguments.removeFirst()
        try JWSBench.run(JWSBench.Options(parsing: arguments))
    }

    /// One token per line, or a JSON object per line with a `jws` field.
    static func readTokens(_ path: String) throws -> [String] {
        try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").compactMap { line in
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { return nil }
            if trimmed.hasPrefix("{") {
                let object = try JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String: Any]
                return object?["jws"] as? String
            }
            return trimmed
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("receiptgate-bench: \(message)\n".utf8))
        exit(2)
    }
}
