import Foundation
import OpenSSLCrypto

/// The `Stripe-Signature` header as Stripe documents it ("Verify webhook signatures manually"):
/// `t=<unix seconds>` and one or more `v1=<hex HMAC-SHA256>` (more than one while a secret is
/// rolled), the MAC taken with the endpoint's secret over `<t>.<raw body>`. Other schemes (`v0`,
/// test mode's legacy) are never trusted. A timestamp further than the tolerance from now, either
/// way, is refused as stale: a captured request cannot be played again later.
struct StripeSignature: Sendable {
    let timestamp: Int64
    /// Every `v1` signature, decoded.
    let signatures: [Data]

    enum Refusal: Error, Equatable {
        /// No header, or one without a timestamp or any `v1` signature.
        case unreadable
        /// No `v1` signature matches any of the endpoint's secrets.
        case mismatch
        /// Signed, but not within the tolerance of now.
        case stale
    }

    /// Reads the header; throws `.unreadable`.
    init(header: String?) throws(Refusal) {
        guard let header else { throw .unreadable }
        var timestamp: Int64?, signatures: [Data] = []
        for item in header.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "t": timestamp = Int64(parts[1])
            case "v1": if let mac = Hex.decode(parts[1]), mac.count == 32 { signatures.append(mac) }
            default: continue
            }
        }
        guard let timestamp, !signatures.isEmpty else { throw .unreadable }
        self.timestamp = timestamp
        self.signatures = signatures
    }

    /// Checks `body` against every secret the endpoint has (two while one is rolled) before the
    /// time, so a forger learns nothing from which check failed. Throws `Refusal`.
    func check(body: Data, secrets: [String], now: Date, tolerance: TimeInterval) throws(Refusal) {
        var signed = Data("\(timestamp).".utf8)
        signed.append(body)
        let matches = secrets.contains { secret in
            guard let expected = try? HMACSHA256.authenticationCode(key: Data(secret.utf8), message: signed) else {
                return false
            }
            // Every signature is compared, in constant time each.
            return signatures.reduce(false) { found, signature in ConstantTime.equals(expected, signature) || found }
        }
        guard matches else { throw .mismatch }
        guard abs(now.timeIntervalSince1970 - TimeInterval(timestamp)) <= tolerance else { throw .stale }
    }

    /// The secrets a setting holds: one, or two comma-separated while one is rolled.
    static func secrets(_ setting: String?) -> [String] {
        (setting ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
