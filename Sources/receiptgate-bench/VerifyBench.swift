import Foundation
import HTTPClient
import OpenSSLCrypto

/// `receiptgate-bench verify`: signed POST /v1/verify requests against a running service, first
/// with every token new (each one recorded), then again (each one a duplicate). Prints
/// `verify_new_per_sec=` and `verify_duplicate_per_sec=`.
enum VerifyBench {
    static func run(_ arguments: [String]) throws {
        var options: [String: String] = [:]
        var index = 0
        while index + 1 < arguments.count {
            options[arguments[index]] = arguments[index + 1]
            index += 2
        }
        guard let url = options["--url"], let clientID = options["--client-id"], let secret = options["--secret"],
            let file = options["--file"]
        else { Bench.fail("verify needs --url, --client-id, --secret and --file") }
        let concurrency = Int(options["--concurrency"] ?? "32") ?? 32
        let tokens = try Bench.readTokens(file)
        guard !tokens.isEmpty else { Bench.fail("no tokens in \(file)") }

        var configuration = HTTPClient.Configuration(baseURL: url)
        configuration.concurrentTransfers = concurrency
        configuration.retry = .none
        let client = HTTPClient(configuration)
        let semaphore = DispatchSemaphore(value: 0)
        let results = ResultsBox()
        Task.detached {
            for pass in ["new", "duplicate"] {
                let started = ContinuousClock.now
                let outcome = await send(
                    tokens, client: client, clientID: clientID, secret: secret, concurrency: concurrency)
                let elapsed = ContinuousClock.now - started
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                results.append(
                    "verify_\(pass)_requests=\(tokens.count) ok=\(outcome.ok) failed=\(outcome.failed) seconds=\(String(format: "%.2f", seconds))"
                )
                results.append("verify_\(pass)_per_sec=\(Int(Double(tokens.count) / seconds))")
            }
            semaphore.signal()
        }
        semaphore.wait()
        results.lines.forEach { print($0) }
    }

    static func send(
        _ tokens: [String], client: HTTPClient, clientID: String, secret: String, concurrency: Int
    ) async -> (ok: Int, failed: Int) {
        await withTaskGroup(of: Bool.self) { group in
            var next = 0, ok = 0, failed = 0
            func submit() {
                guard next < tokens.count else { return }
                let token = tokens[next]
                next += 1
                group.addTask {
                    let body = Data(#"{"store":"app_store","receipt":"\#(token)"}"#.utf8)
                    let timestamp = String(Int(Date().timeIntervalSince1970))
                    guard let digest = try? SHA256.hex(body),
                        let mac = try? HMACSHA256.authenticationCode(
                            key: Data(secret.utf8), message: Data("\(clientID).\(timestamp).\(digest)".utf8))
                    else { return false }  // counted as failed, never sent unsigned
                    let signature = Hex.encode(mac)
                    let request = HTTPClient.Request(
                        method: "POST", url: "/v1/verify",
                        headers: [
                            ("Content-Type", "application/json"), ("X-Client-ID", clientID), ("X-Timestamp", timestamp),
                            ("X-Signature", signature),
                        ], body: body)
                    return (try? await client.send(request))?.status == 200
                }
            }
            for _ in 0..<concurrency { submit() }
            for await success in group {
                if success { ok += 1 } else { failed += 1 }
                submit()
            }
            return (ok, failed)
        }
    }
}

private final class ResultsBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.lock(); stored.append(line); lock.unlock() }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
