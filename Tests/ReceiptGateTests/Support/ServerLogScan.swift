import Foundation
import ReceiptCore
import TestSupport
import Testing

/// What a service started by the end-to-end suites logs, kept so it can be searched for what
/// must never be in a log: client secrets, bearer tokens, receipts and signed transactions,
/// private keys. `VerifyHarness.stop()` scans its service's lines and fails the test on a find,
/// so every suite that starts a service through the harness is covered.
final class ServerLogCapture: Sendable {
    private let lines = LockedBox<[String]>([])

    /// Debug level: the scan sees every line the service can write.
    var logger: Logger {
        Logger(minimumLevel: .debug, sink: LogSink { [lines] line in lines.update { $0.append(line) } })
    }

    var captured: [String] { lines.get() }

    /// Records a test issue for each kind of secret found.
    func scan() {
        for finding in ServerLogScan.findings(in: captured) {
            Issue.record("the server log leaks \(finding)")
        }
    }
}

enum ServerLogScan {
    /// Each kind, and what it looks like: the service's own secret formats (`rgs_` + 43 base64url
    /// characters, `rgt_` + 43), a JWS or JWT (a base64url JSON object, `eyJ`, long), a StoreKit 1
    /// receipt (base64 DER, `MII`, long) and PEM private keys.
    static let patterns: [(kind: String, regex: NSRegularExpression)] = [
        ("a client secret", #"rgs_[A-Za-z0-9_-]{20,}"#),
        ("a bearer token", #"rgt_[A-Za-z0-9_-]{20,}"#),
        ("a signed transaction or token (JWS)", #"eyJ[A-Za-z0-9_-]{30,}"#),
        ("a base64 receipt or certificate", #"MII[A-Za-z0-9+/]{100,}"#),
        ("a private key", #"PRIVATE KEY"#),
    ].compactMap { kind, pattern in (try? NSRegularExpression(pattern: pattern)).map { (kind, $0) } }

    /// "kind: …excerpt…" for every line with something it must not have (excerpts are cut short,
    /// so the failure message does not itself print the secret).
    static func findings(in lines: [String]) -> [String] {
        var found: [String] = []
        for line in lines {
            let range = NSRange(line.startIndex..., in: line)
            for (kind, regex) in patterns {
                guard let match = regex.firstMatch(in: line, range: range), let at = Range(match.range, in: line) else {
                    continue
                }
                found.append("\(kind): \(line[..<at.lowerBound].suffix(100))\(line[at].prefix(8))…")
            }
        }
        return found
    }
}
