import Foundation
import ReceiptCore
import TestSupport
import Testing
import Xsolla
import XsollaTestSupport

/// Reconciliation from the fake's transactions report: the window, its pages, and its errors.
@Suite struct XsollaTransactionsPoll {
    static let now = Date(timeIntervalSince1970: 1_796_000_000)
    static let cursorKey =
        "xsolla.transactions:\(XsollaFixtures.clientID):\(FakeXsolla.merchantID):\(FakeXsolla.projectID)"

    static func poller(_ xsolla: FakeXsolla, pageSize: Int = 100) -> XsollaTransactionsPoller {
        var configuration = xsolla.configuration()
        configuration.pageSize = pageSize
        let provider = XsollaProvider(
            configuration: configuration, http: FakeXsolla.http(retries: 1), logger: Logger(minimumLevel: .error),
            now: { now })
        return XsollaTransactionsPoller(provider: provider, interval: .seconds(60))
    }

    static func run(
        _ poller: XsollaTransactionsPoller, run: MemoryPollRun = MemoryPollRun(),
        owner: ClientWithStoreCredentials = XsollaFixtures.client()
    ) async throws -> [StoreNotification] {
        let found = LockedBox<[StoreNotification]>([])
        try await poller.poll(owners: [owner], run: run) { batch in found.update { $0 += batch } }
        return found.get()
    }

    @Test func paidAndRefundedTransactionsAreRecordedForTheirClient() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(FakeXsolla.record(transactionID: 900_001, player: "p1"), at: Self.now.addingTimeInterval(-3600))
        try xsolla.list(
            FakeXsolla.record(transactionID: 900_002, player: "p2", items: [("a", 1), ("b", 3)]),
            at: Self.now.addingTimeInterval(-3000))
        try xsolla.list(
            FakeXsolla.record(transactionID: 900_003, player: "p3", status: "refunded"),
            at: Self.now.addingTimeInterval(-2000))
        try xsolla.list(
            FakeXsolla.record(transactionID: 900_004, player: "p4", status: "processing"),
            at: Self.now.addingTimeInterval(-1000))
        let found = try await Self.run(Self.poller(xsolla))
        #expect(
            found.map(\.notificationID) == [
                "payment:900001/gems.100", "payment:900002/a", "payment:900002/b", "refund:900003/gems.100",
                // Read again with the refunded ones of the look-back: the core applies it once.
                "refund:900003/gems.100",
            ])
        #expect(found.allSatisfy { $0.clientID == XsollaFixtures.clientID })
        #expect(found[0].event.claimedBy == "p1" && found[0].event.kind == .oneTimeCharge)
        #expect(found[0].event.purchase?.buyer == "p1")
        let raw = String(decoding: try #require(found[0].rawBody), as: UTF8.self)
        #expect(!raw.contains("player@example.com") && raw.contains("900001"), "the stored raw body is trimmed")
        #expect(found[0].event.purchase?.priceMilliunits == 9990 && found[0].event.purchase?.currency == "USD")
        #expect(found[2].event.purchase?.quantity == 3)
        #expect(found[3].event.kind == .refunded && found[3].event.claimedBy == nil)
        let query = try #require(xsolla.queries.first)
        #expect(query["project_id"] == FakeXsolla.projectID && query["show_dry_run"] == "1")
        #expect(query["datetime_from"] == "2026-11-23T00:53:20" && query["datetime_to"] == "2026-11-30T00:53:20")
        await xsolla.shutdown()
    }

    @Test func pagesAreFollowedByOffsetAndTheWindowMovesOnLessTheOverlap() async throws {
        let xsolla = try FakeXsolla()
        for index in 1...5 {
            try xsolla.list(
                FakeXsolla.record(transactionID: 910_000 + Int64(index), player: "p"),
                at: Self.now.addingTimeInterval(Double(-5000 + index)))
        }
        let run = MemoryPollRun()
        let found = try await Self.run(Self.poller(xsolla, pageSize: 2), run: run)
        #expect(found.map(\.notificationID) == (1...5).map { "payment:91000\($0)/gems.100" })
        #expect(run.pages == 3 + 2, "then one page of each refunded status")
        #expect(xsolla.queries.filter { $0["status"] == nil }.map { $0["offset"] } == ["0", "2", "4"])
        #expect(xsolla.queries.allSatisfy { $0["limit"] == "2" })
        let saved = try #require(try await run.cursor(Self.cursorKey))
        let cursor = try JSONDecoder().decode(WindowedPoll.Cursor.self, from: Data(saved.utf8))
        #expect(
            cursor.since == Int64(Self.now.timeIntervalSince1970 * 1000) - 10 * 60 * 1000 && cursor.pageToken == nil)
        await xsolla.shutdown()
    }

    @Test func aByHandRunStartsWhereTheOperatorSaid() async throws {
        let xsolla = try FakeXsolla()
        let since = Self.now.addingTimeInterval(-30 * 86_400)
        try xsolla.list(FakeXsolla.record(transactionID: 920_001, player: "p"), at: since.addingTimeInterval(60))
        let found = try await Self.run(Self.poller(xsolla), run: MemoryPollRun(since: since))
        #expect(found.map(\.notificationID) == ["payment:920001/gems.100"])
        await xsolla.shutdown()
    }

    @Test(arguments: [
        (401, StoreAPIError.Kind.credentialsRefused), (422, .refused), (429, .unavailable), (500, .unavailable),
    ])
    func theReportsErrorsFailTheRunNamingTheProject(_ status: Int, _ kind: StoreAPIError.Kind) async throws {
        let xsolla = try FakeXsolla()
        xsolla.state.retryAfterSeconds.set(120)
        xsolla.failFirst([status])
        let failure = await #expect(throws: PollTargets.Failures.self) {
            _ = try await Self.run(Self.poller(xsolla))
        }
        #expect(failure?.problems.first?.contains("project \(FakeXsolla.projectID)") == true)
        if status == 429 { #expect(failure?.retryAfter == .seconds(120)) }
        if status == 401 { #expect(failure?.problems.first?.contains("--xsolla-api-key") == true) }
        await xsolla.shutdown()
    }

    @Test func aClientWithoutAnAPIKeyIsNamedAndTheOthersAreRead() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(FakeXsolla.record(transactionID: 930_001, player: "p"), at: Self.now.addingTimeInterval(-60))
        let keyless = ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: "rgc_keyless", gameID: nil,
                appIdentifiers: [XsollaProvider.projectIDKind.name: ["1"]],
                settings: [XsollaProvider.Setting.merchantID: [FakeXsolla.merchantID]]),
            credentials: [:])
        let found = LockedBox<[StoreNotification]>([])
        let failure = await #expect(throws: PollTargets.Failures.self) {
            try await Self.poller(xsolla).poll(owners: [keyless, XsollaFixtures.client()], run: MemoryPollRun()) {
                batch in found.update { $0 += batch }
            }
        }
        #expect(failure?.problems.first?.contains("rgc_keyless") == true)
        #expect(found.get().map(\.notificationID) == ["payment:930001/gems.100"])
        await xsolla.shutdown()
    }

    /// The report is searched by the date a sale was made: a refund of one made weeks before the
    /// window is found by reading the refunded transactions of the refund look-back.
    @Test func aLateRefundOfAnOlderSaleIsFound() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(
            FakeXsolla.record(transactionID: 950_001, player: "p", status: "refunded"),
            at: Self.now.addingTimeInterval(-40 * 86_400))
        try xsolla.list(
            FakeXsolla.record(transactionID: 950_002, player: "p", status: "canceled"),
            at: Self.now.addingTimeInterval(-60 * 86_400))
        try xsolla.list(
            FakeXsolla.record(transactionID: 950_003, player: "p"), at: Self.now.addingTimeInterval(-50 * 86_400))
        let found = try await Self.run(Self.poller(xsolla))
        #expect(found.map(\.notificationID) == ["refund:950001/gems.100", "refund:950002/gems.100"])
        #expect(found.allSatisfy { $0.event.kind == .refunded && $0.clientID == XsollaFixtures.clientID })
        let refundQueries = xsolla.queries.filter { $0["status"] != nil }
        #expect(refundQueries.map { $0["status"] } == ["refunded", "canceled"])
        #expect(
            refundQueries.first?["datetime_from"]
                == XsollaValuesForTests.time(Self.now.addingTimeInterval(-92 * 86_400)))
        await xsolla.shutdown()
    }

    /// One sale, pushed and found by reconciliation, names the same purchases the same way: the
    /// ids, the products, the buyer (`external_id` where the user has one).
    @Test func aPushAndTheReportDescribeASaleIdentically() async throws {
        let provider = XsollaFixtures.provider(now: { Self.now })
        let sales: [[(sku: String, quantity: Int)]] = [[("gems.100", 1)], [("sword", 1), ("shield", 2)]]
        for items in sales {
            let pushed = await XsollaFixtures.receive(
                provider, try FakeXsolla.payment(transactionID: 960_001, player: "player-9", items: items))
            let xsolla = try FakeXsolla()
            try xsolla.list(
                FakeXsolla.record(
                    transactionID: 960_001, player: "xsolla-user-1", items: items, externalPlayer: "player-9"),
                at: Self.now.addingTimeInterval(-600))
            let polled = try await Self.run(Self.poller(xsolla))
            let describe: (StoreNotification) -> [String?] = {
                [$0.transactionID, $0.productID, $0.event.purchase?.buyer, $0.event.claimedBy]
            }
            #expect(pushed.notifications.map(describe) == polled.map(describe))
            #expect(!polled.isEmpty)
            await xsolla.shutdown()
        }
    }

    /// A record that names no product (a Web Shop order's payment) is left to the order's
    /// webhook, which names the items: recorded apart, it would stand beside them.
    @Test func aRecordThatListsNoItemIsLeftToTheOrderWebhook() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(
            FakeXsolla.record(transactionID: 970_001, player: "p", items: []), at: Self.now.addingTimeInterval(-60))
        #expect(try await Self.run(Self.poller(xsolla)).isEmpty)
        await xsolla.shutdown()
    }
}

/// The report's time format, as the fake parses it.
enum XsollaValuesForTests {
    static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
