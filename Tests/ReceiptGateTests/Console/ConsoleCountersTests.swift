import Foundation
import Testing

@testable import ReceiptGate

/// The console's in-memory counters are bounded whatever callers send, and forget on time.
@Suite struct ConsoleCounters {
    final class Clock: @unchecked Sendable {
        var now = Date(timeIntervalSince1970: 1_800_000_000)
    }

    @Test func theTallyKeepsAnHourAndABoundedSetOfSeries() {
        let clock = Clock()
        let tally = VerificationTally(stores: ["app_store"], now: { clock.now })
        tally.recordVerified(store: "app_store", duplicate: false)
        clock.now += 30 * 60
        tally.recordVerified(store: "app_store", duplicate: true)
        tally.recordRefused(store: "made-up", storeError: false, reason: "UNKNOWN_STORE")
        var hour = tally.lastHour()
        #expect(hour.count == 60)
        #expect(hour.reduce(0) { $0 + $1.counts.values.reduce(0, +) } == 3)
        clock.now += 31 * 60  // the first verification is now more than an hour old
        hour = tally.lastHour()
        #expect(hour.reduce(0) { $0 + $1.counts.values.reduce(0, +) } == 2)
        #expect(tally.sinceStart[.init(store: "app_store", outcome: "verified")] == 1, "the counter never forgets")
        #expect(tally.sinceStart[.init(store: "unknown", outcome: "refused:UNKNOWN_STORE")] == 1)

        for index in 0..<(VerificationTally.maximumSeries * 2) {
            tally.recordRefused(store: "app_store", storeError: false, reason: "REASON_\(index)")
        }
        #expect(tally.sinceStart.count <= VerificationTally.maximumSeries + 1)
        #expect((tally.sinceStart[.init(store: "app_store", outcome: "refused:OTHER")] ?? 0) > 0)
        #expect(tally.renderPrometheus().split(separator: "\n").count <= VerificationTally.maximumSeries + 3)
    }

    @Test func wrongTokensWaitForTheMinuteAndAddressesStayBounded() {
        let clock = Clock()
        let throttle = AdminTokenThrottle(now: { clock.now })
        for attempt in 1...AdminTokenThrottle.failuresPerMinute {
            #expect(throttle.secondsHeldBack("10.0.0.1") == nil)
            #expect(throttle.failed("10.0.0.1") == (attempt == 1), "one log line per address and minute")
        }
        #expect(throttle.secondsHeldBack("10.0.0.1") == 60)
        #expect(throttle.secondsHeldBack("10.0.0.2") == nil, "another address is not held back")
        clock.now += 45
        #expect(throttle.secondsHeldBack("10.0.0.1") == 15, "the minute began with the first wrong token")
        clock.now += 15
        #expect(throttle.secondsHeldBack("10.0.0.1") == nil)
        // A flood of new addresses empties the table instead of growing it.
        for _ in 1...AdminTokenThrottle.failuresPerMinute { _ = throttle.failed("10.0.0.1") }
        for index in 0..<(AdminTokenThrottle.addressesKept + 5) { _ = throttle.failed("192.0.2.\(index)") }
        #expect(throttle.secondsHeldBack("10.0.0.1") == nil)
    }
}
