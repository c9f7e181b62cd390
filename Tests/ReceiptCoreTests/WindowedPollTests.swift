import Foundation
import ReceiptCore
import Synchronization
import TestSupport
import Testing

/// The engine every store's list poller runs on, against a list in memory: what a store's page
/// reader would see asked, and what the run records and saves. Each store's suite keeps only
/// what its wire format adds.
@Suite struct WindowedPollEngine {
    /// A store's list: entries at epoch-ms times, served `pageSize` at a time with tokens
    /// "page-N"; it can refuse a token, fail once, or answer with a token that leads nowhere.
    final class FakeList: Sendable {
        struct Asked: Equatable { let since: Int64, until: Int64, token: String? }
        let entries: [Int64]
        let pageSize: Int
        let asked = Mutex<[Asked]>([])
        let refusedTokens = Mutex<Set<String>>([])
        let failOnPage = Mutex<Int?>(nil)
        let deadTokenAfterEmpty = Mutex(false)

        init(entries: [Int64], pageSize: Int = 2) {
            self.entries = entries.sorted()
            self.pageSize = pageSize
        }

        struct Refused: Error {}
        struct Unavailable: Error {}

        func page(_ cursor: WindowedPoll.Cursor, until: Int64) throws -> WindowedPoll.Page {
            asked.withLock { $0.append(Asked(since: cursor.since, until: until, token: cursor.pageToken)) }
            if let token = cursor.pageToken, refusedTokens.withLock({ $0.contains(token) }) { throw Refused() }
            let index = cursor.pageToken.flatMap { Int($0.dropFirst("page-".count)) } ?? 0
            if failOnPage.withLock({ $0 == index }) {
                failOnPage.withLock { $0 = nil }
                throw Unavailable()
            }
            if deadTokenAfterEmpty.withLock({ $0 }) {
                return WindowedPoll.Page(notifications: [], listed: 0, nextToken: "page-9")
            }
            let inWindow = entries.filter { $0 >= cursor.since && $0 < until }
            let slice = Array(inWindow.dropFirst(index * pageSize).prefix(pageSize))
            let more = inWindow.count > (index + 1) * pageSize
            return WindowedPoll.Page(
                notifications: slice.map(WindowedPollEngine.notification), listed: slice.count,
                nextToken: more ? "page-\(index + 1)" : nil)
        }
    }

    static func notification(at millis: Int64) -> StoreNotification {
        StoreNotification(
            store: StoreID(rawValue: "test_store"), notificationID: "entry-\(millis)", type: "TEST", subtype: nil,
            environment: nil, appIdentifier: nil,
            transactionID: nil, originalTransactionID: nil, productID: nil, signedAt: nil, decodedJSON: Data("{}".utf8))
    }

    static let day: Int64 = 86_400_000
    static let now: Int64 = 1_800_000_000_000

    static func read(
        _ list: FakeList, _ run: MemoryPollRun, now: Int64 = Self.now, maxPages: Int = 50,
        emptyPageEndsWindow: Bool = false,
        recorded: LockedBox<[String]>, dead: LockedBox<[WindowedPoll.DeadToken]>? = nil
    ) async throws {
        var window = WindowedPoll.Window(oldest: now - 30 * day, now: now, firstStart: now - day)
        window.maxPages = maxPages
        window.emptyPageEndsWindow = emptyPageEndsWindow
        try await WindowedPoll.read(
            "test.list", window: window, run: run, list: { cursor, until in try list.page(cursor, until: until) },
            refusesToken: { $0 is FakeList.Refused }, page: { $0 },
            record: { found in recorded.update { $0 += found.map(\.notificationID) } },
            deadToken: { reason in dead?.update { $0.append(reason) } })
    }

    static func saved(_ run: MemoryPollRun) async throws -> WindowedPoll.Cursor? {
        try await run.cursor("test.list").map {
            try JSONDecoder().decode(WindowedPoll.Cursor.self, from: Data($0.utf8))
        }
    }

    @Test func aWindowIsReadPageByPageThenTheNextStartsAnOverlapBeforeItsEnd() async throws {
        let list = FakeList(entries: [
            Self.now - 5_000, Self.now - 4_000, Self.now - 3_000, Self.now - 2_000, Self.now - 1_000,
        ])
        let run = MemoryPollRun(), recorded = LockedBox<[String]>([])
        try await Self.read(list, run, recorded: recorded)
        #expect(recorded.get().count == 5)
        #expect(list.asked.withLock { $0 }.map(\.token) == [nil, "page-1", "page-2"])
        #expect(
            list.asked.withLock { $0 }.allSatisfy { $0.since == Self.now - Self.day && $0.until == Self.now },
            "one window, first read from a day back")
        let next = try #require(try await Self.saved(run))
        #expect(
            next == WindowedPoll.Cursor(since: Self.now - 10 * 60 * 1000),
            "the next window starts ten minutes before this one ended")
        #expect(run.pages == 3)

        // The next run: from the saved start to its own now.
        try await Self.read(list, run, now: Self.now + 60_000, recorded: recorded)
        #expect(
            list.asked.withLock { $0 }.dropFirst(3).first
                == FakeList.Asked(since: Self.now - 10 * 60 * 1000, until: Self.now + 60_000, token: nil))
    }

    @Test func aRunStoppedByAFailureResumesOnItsSavedPage() async throws {
        let list = FakeList(entries: [Self.now - 4_000, Self.now - 3_000, Self.now - 2_000])
        list.failOnPage.withLock { $0 = 1 }
        let run = MemoryPollRun(), recorded = LockedBox<[String]>([])
        await #expect(throws: FakeList.Unavailable.self) { try await Self.read(list, run, recorded: recorded) }
        #expect(
            try await Self.saved(run)
                == WindowedPoll.Cursor(since: Self.now - Self.day, until: Self.now, pageToken: "page-1"),
            "the first page recorded, the window and the next page's token kept")
        try await Self.read(list, run, now: Self.now + 60_000, recorded: recorded)
        #expect(
            list.asked.withLock { $0 }.last
                == FakeList.Asked(since: Self.now - Self.day, until: Self.now, token: "page-1"),
            "the same window's end, not the new now")
        #expect(recorded.get().count == 3, "nothing read twice, nothing skipped")
    }

    @Test func aPageLimitLeavesTheRestForTheNextRun() async throws {
        let list = FakeList(entries: (1...9).map { Self.now - Int64($0) * 1_000 })
        let run = MemoryPollRun(), recorded = LockedBox<[String]>([])
        try await Self.read(list, run, maxPages: 2, recorded: recorded)
        #expect(recorded.get().count == 4)
        #expect(try await Self.saved(run)?.pageToken == "page-2")
    }

    @Test func aRefusedTokenIsDroppedSoTheNextRunReadsTheWindowFromItsFirstPage() async throws {
        let list = FakeList(entries: [Self.now - 3_000])
        list.refusedTokens.withLock { $0 = ["stale"] }
        let run = MemoryPollRun(), recorded = LockedBox<[String]>([])
        try await run.setCursor(
            "test.list", to: #"{"since":\#(Self.now - 60_000),"until":\#(Self.now),"pageToken":"stale"}"#)
        await #expect(throws: FakeList.Refused.self) { try await Self.read(list, run, recorded: recorded) }
        #expect(try await Self.saved(run) == WindowedPoll.Cursor(since: Self.now - 60_000))
        try await Self.read(list, run, recorded: recorded)
        #expect(recorded.get() == ["entry-\(Self.now - 3_000)"])
        #expect(list.asked.withLock { $0 }.map(\.token) == ["stale", nil])
    }

    @Test func aFailureThatIsNotARefusalKeepsTheToken() async throws {
        let list = FakeList(entries: [Self.now - 3_000])
        list.failOnPage.withLock { $0 = 4 }
        let run = MemoryPollRun(), recorded = LockedBox<[String]>([])
        let saved = #"{"since":\#(Self.now - 60_000),"until":\#(Self.now),"pageToken":"page-4"}"#
        try await run.setCursor("test.list", to: saved)
        await #expect(throws: FakeList.Unavailable.self) { try await Self.read(list, run, recorded: recorded) }
        #expect(try await Self.saved(run)?.pageToken == "page-4")
    }

    /// A store that hands out tokens for empty pages (an opt-in): the first ends the window.
    @Test func aTokenAfterAnEmptyPageEndsTheWindowInsteadOfSpinning() async throws {
        let list = FakeList(entries: [])
        list.deadTokenAfterEmpty.withLock { $0 = true }
        let run = MemoryPollRun(), recorded = LockedBox<[String]>([]), dead = LockedBox<[WindowedPoll.DeadToken]>([])
        try await Self.read(list, run, emptyPageEndsWindow: true, recorded: recorded, dead: dead)
        #expect(list.asked.withLock { $0 }.count == 1)
        #expect(dead.get() == [.afterAnEmptyPage])
        #expect(try await Self.saved(run)?.pageToken == nil, "the window is taken as read")
    }

    /// Otherwise an empty page's token is followed (a store may list nothing on a page and more
    /// after it); the same token again still ends the window.
    @Test func anEmptyPagesTokenIsFollowedUnlessItRepeats() async throws {
        let list = FakeList(entries: [])
        list.deadTokenAfterEmpty.withLock { $0 = true }
        let run = MemoryPollRun(), recorded = LockedBox<[String]>([]), dead = LockedBox<[WindowedPoll.DeadToken]>([])
        try await Self.read(list, run, recorded: recorded, dead: dead)
        #expect(list.asked.withLock { $0 }.map(\.token) == [nil, "page-9"])
        #expect(dead.get() == [.repeated])
    }

    /// Only the store's refusal of the list request drops a token: a refusal while reading one of
    /// the page's entries (a purchase read again) does not.
    @Test func aRefusalReadingAnEntryKeepsTheToken() async throws {
        let list = FakeList(entries: [Self.now - 3_000])
        let run = MemoryPollRun()
        try await run.setCursor(
            "test.list", to: #"{"since":\#(Self.now - 60_000),"until":\#(Self.now),"pageToken":"page-0"}"#)
        await #expect(throws: FakeList.Refused.self) {
            try await WindowedPoll.read(
                "test.list", window: WindowedPoll.Window(oldest: Self.now - 30 * Self.day, now: Self.now), run: run,
                list: { cursor, until in try list.page(cursor, until: until) },
                refusesToken: { $0 is FakeList.Refused },
                page: { _ in throw FakeList.Refused() }, record: { _ in })
        }
        #expect(try await Self.saved(run)?.pageToken == "page-0")
    }

    @Test func aWindowOlderThanTheStoreKeepsStartsAgainFromTheOldestItHas() async throws {
        let list = FakeList(entries: [])
        let run = MemoryPollRun(), recorded = LockedBox<[String]>([])
        try await run.setCursor(
            "test.list",
            to: #"{"since":\#(Self.now - 40 * Self.day),"until":\#(Self.now - 39 * Self.day),"pageToken":"gone"}"#)
        try await Self.read(list, run, recorded: recorded)
        #expect(
            list.asked.withLock { $0 } == [FakeList.Asked(since: Self.now - 30 * Self.day, until: Self.now, token: nil)]
        )
    }

    @Test func aByHandRunStartsWhereTheOperatorSaid() async throws {
        let list = FakeList(entries: [])
        let recorded = LockedBox<[String]>([])
        let since = Date(timeIntervalSince1970: Double(Self.now - 3 * Self.day) / 1000)
        try await Self.read(list, MemoryPollRun(since: since), recorded: recorded)
        let tooOld = Date(timeIntervalSince1970: Double(Self.now - 90 * Self.day) / 1000)
        try await Self.read(list, MemoryPollRun(since: tooOld), recorded: recorded)
        #expect(
            list.asked.withLock { $0 }.map(\.since) == [Self.now - 3 * Self.day, Self.now - 30 * Self.day],
            "no older than the store keeps")
    }

    /// Saved by the App Store and Huawei pollers before the engine: their tokens are still read.
    @Test func cursorsSavedUnderTheOldTokenNamesAreRead() throws {
        for name in ["pageToken", "paginationToken", "continuationToken"] {
            let cursor = try JSONDecoder().decode(
                WindowedPoll.Cursor.self, from: Data(#"{"since":1,"until":2,"\#(name)":"t"}"#.utf8))
            #expect(cursor == WindowedPoll.Cursor(since: 1, until: 2, pageToken: "t"), "\(name)")
        }
    }

    @Test func oneTargetsTroubleDoesNotStopTheOthersAndTheLongestRetryAfterIsKept() async throws {
        struct Refused: Error {}
        let polled = Mutex<[String]>([])
        let failure = await #expect(throws: PollTargets.Failures.self) {
            try await PollTargets.each(
                ["a", "b", "c"], subject: "the test list", known: [PollTargets.Problem("x: no key")]
            ) { target in
                polled.withLock { $0.append(target) }
                if target != "b" { throw Refused() }
            } problem: { target, _ in
                PollTargets.Problem("\(target): rate limited", retryAfter: target == "a" ? .seconds(30) : .seconds(120))
            }
        }
        #expect(polled.withLock { $0 } == ["a", "b", "c"])
        #expect(failure?.retryAfter == .seconds(120))
        #expect(failure?.problems == ["x: no key", "a: rate limited", "c: rate limited"])
        #expect(failure?.description == "the test list not read for x: no key; a: rate limited; c: rate limited")
    }

    @Test func aFailureNoTargetOwnsStopsTheRun() async throws {
        struct LeaseLost: Error {}
        let polled = Mutex<[String]>([])
        await #expect(throws: LeaseLost.self) {
            try await PollTargets.each(["a", "b"], subject: "the test list") { target in
                polled.withLock { $0.append(target) }
                throw LeaseLost()
            } problem: { _, _ in
                nil
            }
        }
        #expect(polled.withLock { $0 } == ["a"])
    }
}
