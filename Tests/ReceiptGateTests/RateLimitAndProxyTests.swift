import Foundation
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

@Suite struct RateLimitSettings {
    @Test func overridesParseAndBadOnesNameTheVariable() throws {
        let parsed = try ServiceConfiguration.parseRateLimits(
            "native.client=1000/1s, iap.address=20/1m,stampcard.address=off")
        #expect(parsed["native.client"] == .init(limit: 1000, window: .seconds(1)))
        #expect(parsed["iap.address"] == .init(limit: 20, window: .seconds(60)))
        #expect(parsed["stampcard.address"]?.limit == nil)
        for bad in [
            "native.client", "native.client=0/1s", "native.client=5/2d", "native.client=5/25h", "=5/1s", "x=five/1s",
        ] {
            #expect(throws: ServiceConfiguration.Invalid.self, "\(bad)") {
                try ServiceConfiguration.parseRateLimits(bad)
            }
        }
        let error = try #require(throws: ServiceConfiguration.Invalid.self) {
            try ServiceConfiguration.fromEnvironment(["RECEIPTGATE_RATE_LIMITS": "native.client=lots"])
        }
        #expect(error.variable == "RECEIPTGATE_RATE_LIMITS")
    }

    @Test func localCountersLimitPerWindowAndStayBounded() {
        let counters = LocalCounters(capacity: 100)
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect((1...5).map { _ in counters.hit("a", windowSeconds: 10, now: now).hits } == [1, 2, 3, 4, 5])
        // A new window starts from one again.
        #expect(counters.hit("a", windowSeconds: 10, now: now.addingTimeInterval(10)).hits == 1)
        #expect(counters.hit("a", windowSeconds: 10, now: now.addingTimeInterval(15)).secondsLeft == 5)
        // A flood of distinct keys never grows past the capacity.
        for index in 0..<10_000 { _ = counters.hit("key-\(index)", windowSeconds: 10, now: now.addingTimeInterval(15)) }
        #expect(counters.count <= 100)
    }

    @Test func addressesAreCountedByIPv4OrByIPv6Slash64() {
        #expect(RateLimiter.addressKey("198.51.100.7") == "198.51.100.7")
        #expect(RateLimiter.addressKey("2001:db8:1:2:aaaa::1") == RateLimiter.addressKey("2001:db8:1:2:bbbb::2"))
        #expect(RateLimiter.addressKey("2001:db8:1:2::1") != RateLimiter.addressKey("2001:db8:1:3::1"))
        #expect(RateLimiter.addressKey("::ffff:198.51.100.7") == "198.51.100.7")
        #expect(RateLimiter.addressKey("unknown") == "unknown")
    }

    /// Counted by the limiter's clock, placed 100 s before a day's window ends: the refusal names
    /// exactly that end, and the next window counts from one again, with no test waiting for it.
    @Test func anOverrideTurnsAPolicyOffOrChangesIt() async throws {
        let policy = RateLimitPolicy(
            name: "native.client", key: .client, limit: 10_000, window: .seconds(1), shared: false)
        let clock = LockedBox(Date(timeIntervalSince1970: 1_700_006_400 - 100))  // 100 s before a multiple of a day
        let unreachable = RateLimitRepository(pool: .init(.init(connectionString: "host=/nonexistent", size: 1)))
        let limiter = RateLimiter(
            shared: unreachable, overrides: ["native.client": .init(limit: 2, window: .seconds(86_400))],
            logger: Logger(minimumLevel: .error), now: { clock.get() })
        try await limiter.check(policy, key: "c")
        try await limiter.check(policy, key: "c")
        let refusal = try #require(
            await #expect(throws: RouteRefusal.self) { try await limiter.check(policy, key: "c") })
        #expect(refusal.code == .rateLimited)
        #expect(refusal.retryAfter == 100)
        clock.set(clock.get().addingTimeInterval(100))
        try await limiter.check(policy, key: "c")
        let off = RateLimiter(
            shared: unreachable, overrides: ["native.client": .init(limit: nil, window: .seconds(1))],
            logger: Logger(minimumLevel: .error))
        for _ in 0..<20_000 { try await off.check(policy, key: "c") }
    }
}

@Suite struct TrustedProxies {
    @Test func forwardedForIsBelievedOnlyFromAProxy() throws {
        let proxies = try ServiceConfiguration.parseTrustedProxies("10.0.0.0/8, 127.0.0.1")
        #expect(
            TrustedProxy.callerAddress(peer: "203.0.113.9", forwardedFor: "198.51.100.1", trusted: proxies)
                == "203.0.113.9")
        #expect(
            TrustedProxy.callerAddress(peer: "10.1.2.3", forwardedFor: "198.51.100.1", trusted: proxies)
                == "198.51.100.1")
        // The nearest hop that is not ours: what a client prepends cannot pick its own address.
        #expect(
            TrustedProxy.callerAddress(
                peer: "127.0.0.1", forwardedFor: "1.1.1.1, 198.51.100.1, 10.0.0.7", trusted: proxies) == "198.51.100.1")
        #expect(
            TrustedProxy.callerAddress(peer: "127.0.0.1", forwardedFor: "<script>", trusted: proxies) == "127.0.0.1")
        #expect(TrustedProxy.callerAddress(peer: "127.0.0.1", forwardedFor: nil, trusted: proxies) == "127.0.0.1")
        #expect(throws: ServiceConfiguration.Invalid.self) {
            try ServiceConfiguration.parseTrustedProxies("10.0.0.0/33")
        }
        #expect(throws: ServiceConfiguration.Invalid.self) {
            try ServiceConfiguration.parseTrustedProxies("proxy.example")
        }
    }
}
