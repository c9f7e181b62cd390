import Foundation
import ReceiptCore
import TestSupport
import Testing

/// The one expiring, single-flight cache the store clients keep their tokens and certificates in.
@Suite struct ExpiringCacheRules {
    struct Refused: Error {}
    struct Unavailable: Error {}

    @Test func callersAskingAtOnceShareOneFetch() async throws {
        let cache = ExpiringCache<String, String>()
        let gate = Latch()
        let results = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await cache.value(for: "k") {
                        await gate.wait()
                        return ("v", Date().addingTimeInterval(3600))
                    }
                }
            }
            #expect(await eventually { await cache.fetches == 1 })
            await gate.open()
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results == Array(repeating: "v", count: 20))
        #expect(await cache.fetches == 1)
    }

    @Test func aValueIsKeptUntilItsTimeThenFetchedAgain() async throws {
        let clock = LockedBox(Date(timeIntervalSince1970: 1_000_000))
        let cache = ExpiringCache<String, Int>(now: { clock.get() })
        let fetched = LockedBox(0)
        let fetch: @Sendable () async throws -> (Int, usableUntil: Date) = {
            (
                fetched.update {
                    $0 += 1; return $0
                }, clock.get().addingTimeInterval(60)
            )
        }
        #expect(try await cache.value(for: "k", fetch: fetch) == 1)
        clock.update { $0 = $0.addingTimeInterval(59) }
        #expect(try await cache.value(for: "k", fetch: fetch) == 1)
        clock.update { $0 = $0.addingTimeInterval(1) }
        #expect(try await cache.value(for: "k", fetch: fetch) == 2, "no longer usable at its time")
    }

    @Test func aChosenRefusalIsRememberedForItsLifetimeAndOthersAreNot() async throws {
        let clock = LockedBox(Date(timeIntervalSince1970: 1_000_000))
        let cache = ExpiringCache<String, String>(
            now: { clock.get() }, failureLifetime: 30, remembersFailure: { $0 is Refused })
        await #expect(throws: Refused.self) { try await cache.value(for: "bad") { throw Refused() } }
        await #expect(throws: Refused.self) { try await cache.value(for: "bad") { ("never asked", clock.get()) } }
        #expect(await cache.fetches == 1, "answered from memory")
        clock.update { $0 = $0.addingTimeInterval(30) }
        #expect(try await cache.value(for: "bad") { ("fixed", clock.get().addingTimeInterval(60)) } == "fixed")

        await #expect(throws: Unavailable.self) { try await cache.value(for: "down") { throw Unavailable() } }
        #expect(
            try await cache.value(for: "down") { ("back", clock.get().addingTimeInterval(60)) } == "back",
            "not remembered")
    }

    @Test func invalidatingForgetsOnlyTheValueFoundBad() async throws {
        let cache = ExpiringCache<String, String>()
        let fresh = Date().addingTimeInterval(3600)
        _ = try await cache.value(for: "k") { ("token-1", fresh) }
        await cache.invalidate("k") { $0 == "token-0" }  // an older token: the newer one stays
        #expect(try await cache.value(for: "k") { ("token-2", fresh) } == "token-1")
        await cache.invalidate("k") { $0 == "token-1" }
        #expect(try await cache.value(for: "k") { ("token-2", fresh) } == "token-2")
    }

    @Test func atMostMaxEntriesAreKeptTheSoonestToExpireMakingWay() async throws {
        let clock = LockedBox(Date(timeIntervalSince1970: 1_000_000))
        let cache = ExpiringCache<Int, Int>(now: { clock.get() }, maxEntries: 2)
        _ = try await cache.value(for: 1) { (1, clock.get().addingTimeInterval(10)) }
        _ = try await cache.value(for: 2) { (2, clock.get().addingTimeInterval(100)) }
        _ = try await cache.value(for: 3) { (3, clock.get().addingTimeInterval(100)) }
        #expect(try await cache.value(for: 2) { (-2, clock.get()) } == 2)
        #expect(
            try await cache.value(for: 1) { (-1, clock.get().addingTimeInterval(100)) } == -1,
            "the soonest to expire was dropped")
    }
}
