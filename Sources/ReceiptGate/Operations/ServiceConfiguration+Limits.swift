import Foundation
import ReceiptCore

/// Rate-limit overrides and trusted proxies (`RECEIPTGATE_RATE_LIMITS`, `RECEIPTGATE_TRUSTED_PROXIES`).
extension ServiceConfiguration {
    /// A policy's limit and window as configured; nil limit means "off".
    public struct RateLimitOverride: Sendable, Equatable {
        public var limit: Int?
        public var window: Duration
    }

    /// `name=LIMIT/WINDOW` pairs, comma-separated: `native.client=1000/1s,iap.address=20/1m`;
    /// WINDOW is a number of seconds (`s`), minutes (`m`) or hours (`h`), at most a day;
    /// `name=off` turns a policy off.
    static func parseRateLimits(_ text: String) throws -> [String: RateLimitOverride] {
        let variable = "RECEIPTGATE_RATE_LIMITS"
        var overrides: [String: RateLimitOverride] = [:]
        for item in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !item.isEmpty {
            let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else {
                throw Invalid(
                    variable: variable,
                    problem: "expected name=LIMIT/WINDOW (e.g. native.client=1000/1s), got \"\(item)\"")
            }
            if parts[1] == "off" {
                overrides[parts[0]] = RateLimitOverride(limit: nil, window: .seconds(1))
                continue
            }
            let spec = parts[1].split(separator: "/").map(String.init)
            guard spec.count == 2, let limit = Int(spec[0]), limit > 0, let unit = spec[1].last,
                let amount = Int(spec[1].dropLast()), amount > 0,
                let multiplier = ["s": 1, "m": 60, "h": 3600][String(unit)], amount * multiplier <= 86_400
            else {
                throw Invalid(
                    variable: variable,
                    problem: "\(parts[0]): expected LIMIT/WINDOW such as 20/1m (window up to 24h), got \"\(parts[1])\"")
            }
            overrides[parts[0]] = RateLimitOverride(limit: limit, window: .seconds(amount * multiplier))
        }
        return overrides
    }

    /// Comma-separated IP addresses or IPv4 CIDR ranges of the proxies in front of us.
    static func parseTrustedProxies(_ text: String) throws -> [TrustedProxy] {
        try text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map {
            item in
            guard let proxy = TrustedProxy(item) else {
                throw Invalid(
                    variable: "RECEIPTGATE_TRUSTED_PROXIES",
                    problem: "expected IP addresses or IPv4 CIDR ranges, got \"\(item)\"")
            }
            return proxy
        }
    }
}

/// A proxy whose `X-Forwarded-For` we believe: one address, or an IPv4 range.
public struct TrustedProxy: Sendable, Equatable {
    let address: String
    let ipv4Range: (network: UInt32, mask: UInt32)?

    public init?(_ text: String) {
        if let slash = text.firstIndex(of: "/") {
            guard let network = Self.ipv4(String(text[..<slash])), let bits = Int(text[text.index(after: slash)...]),
                (0...32).contains(bits)
            else { return nil }
            let mask: UInt32 = bits == 0 ? 0 : ~UInt32(0) << (32 - bits)
            address = text
            ipv4Range = (network & mask, mask)
        } else {
            guard
                Self.ipv4(text) != nil
                    || (text.contains(":") && text.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }))
            else { return nil }
            address = text.lowercased()
            ipv4Range = nil
        }
    }

    public func contains(_ candidate: String) -> Bool {
        if let range = ipv4Range {
            guard let value = Self.ipv4(candidate) else { return false }
            return value & range.mask == range.network
        }
        return candidate.lowercased() == address
    }

    public static func == (lhs: TrustedProxy, rhs: TrustedProxy) -> Bool { lhs.address == rhs.address }

    static func ipv4(_ text: String) -> UInt32? {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return nil }
        var value: UInt32 = 0
        for octet in octets {
            guard octet.count <= 3, let byte = UInt8(octet) else { return nil }
            value = value << 8 | UInt32(byte)
        }
        return value
    }

    /// The caller's address: the peer, unless the peer is a trusted proxy; then the nearest
    /// `X-Forwarded-For` entry that is not one of ours.
    public static func callerAddress(peer: String?, forwardedFor: String?, trusted: [TrustedProxy]) -> String? {
        guard let peer, let forwardedFor, trusted.contains(where: { $0.contains(peer) }) else { return peer }
        let hops = forwardedFor.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        for hop in hops.reversed() where !trusted.contains(where: { $0.contains(hop) }) {
            // Only something shaped like an address: the header is the caller's to write.
            guard hop.count <= 45, hop.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" }) else { return peer }
            return hop
        }
        return hops.first ?? peer
    }
}
