import AppStore
import Foundation
import OpenSSLCrypto

/// `receiptgate-bench jws [--root CERT] [--file TOKENS] [--seconds N] [--count N] [--write-corpus DIR] [--owned N]`:
/// verifies StoreKit 2 tokens on one thread, as the service does per request (chain proof from
/// the cache after the first token, one ECDSA verification, payload decoding), and ends with
/// `jws_verify_per_sec=<number>`.
enum JWSBench {
    struct Options {
        var rootPath: String?
        var filePath: String?
        var corpusDirectory: String?
        var seconds = 5.0
        var count = 1000
        /// Also written to the corpus: this many non-consumable purchases (`owned.txt`, product
        /// `pass.season`), for loads that need entitlements to read.
        var owned = 0

        /// Every option takes a value; anything else stops the benchmark with usage status 2.
        init(parsing arguments: [String]) {
            var arguments = arguments[...]
            while let option = arguments.popFirst() {
                guard let value = arguments.popFirst() else { Bench.fail("\(option) needs a value") }
                switch option {
                case "--root": rootPath = value
                case "--file": filePath = value
                case "--seconds": seconds = Double(value) ?? { Bench.fail("--seconds needs a number") }()
                case "--write-corpus": corpusDirectory = value
                case "--count": count = Int(value) ?? { Bench.fail("--count needs a number") }()
                case "--owned": owned = Int(value) ?? { Bench.fail("--owned needs a number") }()
                default: Bench.fail("unknown option \(option)")
                }
            }
        }
    }

    static func run(_ options: Options) throws {
        let tokens: [String], roots: [Certificate]
        if let filePath = options.filePath {
            tokens = try Bench.readTokens(filePath)
            roots =
                try options.rootPath.map {
                    try Certificate.parseFile(contents: try Data(contentsOf: URL(fileURLWithPath: $0)))
                }
                ?? [try AppleRootCertificates.appleRoot()]
        } else {
            let pki = try BenchPKI()
            tokens = try (0..<options.count).map { index in
                try pki.transaction(id: String(2_000_000_000_000_000 + index))
            }
            roots = [pki.root]
            if let corpusDirectory = options.corpusDirectory {
                try writeCorpus(tokens, root: pki.root, to: corpusDirectory)
                if options.owned > 0 {
                    let owned = try (0..<options.owned).map { index in
                        try pki.transaction(
                            id: String(2_100_000_000_000_000 + index), product: "pass.season", type: "Non-Consumable")
                    }
                    try owned.joined(separator: "\n").write(
                        toFile: corpusDirectory + "/owned.txt", atomically: true, encoding: .utf8)
                }
                // --seconds 0: the corpus is what was asked for (a load elsewhere will use it).
                if options.seconds <= 0 { return }
            }
        }
        guard !tokens.isEmpty else { Bench.fail("no tokens") }

        let verifier = AppStoreSignedDataVerifier(trustRoots: roots)
        // Each token is checked against its own bundle and environment: this measures verification.
        let anyApp = AppStoreExpectations(
            bundleIDs: Set(try tokens.map { try bundleID(of: $0) }),
            environments: [.sandbox, .production])
        checkEveryTokenVerifies(tokens, verifier: verifier, expecting: anyApp)
        try measure(tokens, verifier: verifier, expecting: anyApp, seconds: options.seconds)
    }

    /// The tokens and their root, for a load run elsewhere (Benchmarks/apple_library_jws.py, `verify`).
    static func writeCorpus(_ tokens: [String], root: Certificate, to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try tokens.joined(separator: "\n").write(toFile: directory + "/tokens.txt", atomically: true, encoding: .utf8)
        try root.derEncoded.write(to: URL(fileURLWithPath: directory + "/root.der"))
        print("wrote \(tokens.count) tokens and root.der to \(directory)")
    }

    /// Every token must verify before it is timed: a benchmark of rejections measures nothing.
    static func checkEveryTokenVerifies(
        _ tokens: [String], verifier: AppStoreSignedDataVerifier, expecting: AppStoreExpectations
    ) {
        for token in tokens {
            do {
                _ = try verifier.verifyTransaction(token, expecting: expecting)
            } catch {
                Bench.fail("a token does not verify: \(error)")
            }
        }
    }

    /// Rounds over all the tokens until `seconds` have passed (the last round finishes).
    static func measure(
        _ tokens: [String], verifier: AppStoreSignedDataVerifier, expecting: AppStoreExpectations,
        seconds: Double
    ) throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(seconds * 1000))
        let started = clock.now
        var verified = 0
        while clock.now < deadline {
            for token in tokens {
                _ = try verifier.verifyTransaction(token, expecting: expecting)
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
        let payload = Base64.urlDecode(segment).flatMap {
            try? JSONSerialization.jsonObject(with: $0) as? [String: Any]
        }
        guard let bundle = payload?["bundleId"] as? String else { Bench.fail("a token has no bundleId") }
        return bundle
    }

}
