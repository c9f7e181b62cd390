import Foundation
import OpenSSLCrypto
import ReceiptCore
import Synchronization

/// Applies routes' rate-limit policies: shared ones through Postgres (every process counts
/// together), the others in this process's memory, bounded whatever callers send.
final class RateLimiter: Sendable {
    private let shared: RateLimitRepository
    private let overrides: [String: ServiceConfiguration.RateLimitOverride]
    private let local = LocalCounters(capacity: 100_000)
    private let logger: Logger
    /// The clock of limits counted in memory, so that a test can place itself in a window. Shared
    /// limits count by the database's clock, the one every process agrees on.
    private let now: @Sendable () -> Date

    init(
        shared: RateLimitRepository, overrides: [String: ServiceConfiguration.RateLimitOverride], logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.shared = shared
        self.overrides = overrides
        self.logger = logger
        self.now = now
    }

    /// The policy as configured (`RECEIPTGATE_RATE_LIMITS`), or nil when turned off.
    func effective(_ policy: RateLimitPolicy) -> RateLimitPolicy? {
        guard let override = overrides[policy.name] else { return policy }
        guard let limit = override.limit else { return nil }
        var adjusted = policy
        adjusted.limit = limit
        adjusted.window = override.window
        return adjusted
    }

    /// Counts one request; throws a `RATE_LIMITED` refusal with the seconds to wait.
    func check(_ declared: RateLimitPolicy, key: String) async throws {
        guard let policy = effective(declared) else { return }
        let (windowSeconds, boundedKey) = try Self.window(policy, key: key)
        let (hits, secondsLeft): (Int, Int)
        if policy.shared {
            do {
                (hits, secondsLeft) = try await shared.hit(
                    policy: policy.name, key: boundedKey, windowSeconds: windowSeconds)
            } catch {
                // A database outage fails the request elsewhere; the limiter does not add a second failure.
                logger.warning("rate limit not counted", ["policy": policy.name, "error": "\(error)"])
                return
            }
        } else {
            (hits, secondsLeft) = local.hit("\(policy.name)|\(boundedKey)", windowSeconds: windowSeconds, now: now())
        }
        if hits > policy.limit {
            throw RouteRefusal(
                code: .rateLimited,
                message: "too many requests (\(policy.limit) per \(windowSeconds) s); retry after \(secondsLeft) s",
                retryAfter: secondsLeft)
        }
    }

    /// Takes back one hit: a limit on failures counts every attempt first (so a burst cannot
    /// slip past it) and forgives the ones that succeeded.
    func forgive(_ declared: RateLimitPolicy, key: String) async throws {
        guard let policy = effective(declared) else { return }
        let (windowSeconds, boundedKey) = try Self.window(policy, key: key)
        if policy.shared {
            try await shared.forgive(policy: policy.name, key: boundedKey, windowSeconds: windowSeconds)
        } else {
            local.forgive("\(policy.name)|\(boundedKey)", windowSeconds: windowSeconds, now: now())
        }
    }

    private static func window(_ policy: RateLimitPolicy, key: String) throws -> (seconds: Int, key: String) {
        // An IPv6 caller owns at least a /64: counting by full address would give it endless budgets.
        let key = policy.key == .callerAddress ? addressKey(key) : key
        // Keys come from callers: hash long ones so neither memory nor rows grow with their length.
        return (
            max(1, Int(policy.window.components.seconds)), key.utf8.count <= 64 ? key : try SHA256.hex(Data(key.utf8))
        )
    }
}

extension RateLimiter {
    /// IPv4 as is; IPv6 by its /64 network (IPv4-mapped IPv6 as the IPv4 address).
    static func addressKey(_ address: String) -> String {
        var v6 = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff {
            return bytes[12..<16].map(String.init).joined(separator: ".")
        }
        return stride(from: 0, to: 8, by: 2).map { String(format: "%02x%02x", bytes[$0], bytes[$0 + 1]) }.joined(
            separator: ":") + "::/64"
    }
}

/// Fixed-window counters in memory. At most `capacity` keys: when full, windows that ended are
/// dropped, and if that is not enough, all of them (a burst of new keys resets, never grows).
final class LocalCounters: Sendable {
    private let counters = Mutex<[String: (window: Int, hits: Int)]>([:])
    private let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    func hit(_ key: String, windowSeconds: Int, now: Date) -> (hits: Int, secondsLeft: Int) {
        let seconds = Int(now.timeIntervalSince1970)
        let window = seconds / windowSeconds
        let secondsLeft = max(1, (window + 1) * windowSeconds - seconds)
        return counters.withLock { counters in
            if counters.count >= capacity, counters[key] == nil {
                counters = counters.filter { $0.value.window == window }
                if counters.count >= capacity { counters.removeAll(keepingCapacity: true) }
            }
            let previous = counters[key].map { $0.window == window ? $0.hits : 0 } ?? 0
            let hits = previous + 1
            counters[key] = (window, hits)
            return (hits, secondsLeft)
        }
    }

    func forgive(_ key: String, windowSeconds: Int, now: Date) {
        let window = Int(now.timeIntervalSince1970) / windowSeconds
        counters.withLock { counters in
            if let counter = counters[key], counter.window == window, counter.hits > 0 {
                counters[key] = (window, counter.hits - 1)
            }
        }
    }

    var count: Int { counters.withLock { $0.count } }
}
