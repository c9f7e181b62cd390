import AppStore
import Crypto
import Foundation

/// Benchmarks run by hand (docs/benchmarks.md). Not a test: numbers depend on the machine.
///
///     receiptgate-bench jws [--root CERT] [--file TOKENS] [--seconds N] [--write-corpus DIR]
///
/// Verifies StoreKit 2 tokens on one thread, as the service does per request (chain proof from
/// the cache after the first token, one ECDSA verification, payload decoding), and ends with
/// `jws_verify_per_sec=<number>`.
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
            print("""
                usage: receiptgate-bench jws [--root CERT] [--file TOKENS] [--seconds N] [--count N] [--write-corpus DIR]
                       receiptgate-bench verify --url URL --client-id ID --secret SECRET --file TOKENS [--concurrency N]
                """)
            exit(arguments.isEmpty || arguments.first == "--help" ? 0 : 2)
        }
        arguments.removeFirst()
        var rootPath: String?, filePath: String?, corpusDirectory: String?, seconds = 5.0, count = 1000
        while let option = arguments.first {
            arguments.removeFirst()
            guard let value = arguments.first else { fail("\(option) needs a value") }
            arguments.removeFirst()
            switch option {
            case "--root": rootPath = value
            case "--file": filePath = value
            case "--seconds": seconds = Double(value) ?? { fail("--seconds needs a number") }()
            case "--write-corpus": corpusDirectory = value
            case "--count": count = Int(value) ?? { fail("--count needs a number") }()
            default: fail("unknown option \(option)")
            }
        }

        let tokens: [String], roots: [Certificate]
        if let filePath {
            tokens = try readTokens(filePath)
            roots = try rootPath.map { try Certificate.parseFile(contents: try Data(contentsOf: URL(fileURLWithPath: $0))) }
                ?? [try AppleRootCertificates.appleRoot()]
        } else {
            let pki = try BenchPKI()
            tokens = try (0..<count).map { index in try pki.transaction(id: String(2_000_000_000_000_000 + index)) }
            roots = [pki.root]
            if let corpusDirectory {
                try FileManager.default.createDirectory(atPath: corpusDirectory, withIntermediateDirectories: true)
                try tokens.joined(separator: "\n").write(toFile: corpusDirectory + "/tokens.txt", atomically: true, encoding: .utf8)
                try pki.root.derEncoded.write(to: URL(fileURLWithPath: corpusDirectory + "/root.der"))
                print("wrote \(tokens.count) tokens and root.der to \(corpusDirectory)")
                // --seconds 0: the corpus is what was asked for (a load elsewhere will use it).
                if seconds <= 0 { return }
            }
        }
        guard !tokens.isEmpty else { fail("no tokens") }

        let verifier = AppStoreSignedDataVerifier(trustRoots: roots)
        // Each token is checked against its own bundle and environment: this measures verification.
        let anyApp = AppStoreExpectations(bundleIDs: Set(try tokens.map { try bundleID(of: $0) }),
                                          environments: [.sandbox, .production])
        // Every token must verify before it is timed: a benchmark of rejections measures nothing.
        for token in tokens {
            do {
                _ = try verifier.verifyTransaction(token, expecting: anyApp)
            } catch {
                fail("a token does not verify: \(error)")
            }
        }
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(seconds * 1000))
        let started = clock.now
        var verified = 0
        while clock.now < deadline {
            for token in tokens {
                _ = try verifier.verifyTransaction(token, expecting: anyApp)
                verified += 1
            }
        }
        let elapsed = clock.now - started
        let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("verified=\(verified) seconds=\(String(format: "%.2f", elapsedSeconds)) distinct_tokens=\(tokens.count)")
        print("jws_verify_per_sec=\(Int(Double(verified) / elapsedSeconds))")
    }

    static func bundleID(of token: String) throws -> String {
        let segment = token.split(separator: ".").dropFirst().first.map(String.init) ?? ""
        let payload = Base64.urlDecode(segment).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
        guard let bundle = payload?["bundleId"] as? String else { fail("a token has no bundleId") }
        return bundle
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
