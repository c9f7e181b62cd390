import Foundation
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import ReceiptCore
import TestSupport
import Testing

/// The cancelled-purchases poll against the fake's list: each record read again from Huawei
/// before it becomes a refund, pages followed by their token, the window remembered.
@Suite struct HuaweiAppGalleryCancelledPoll {
    static let cursorKey = "huawei_appgallery.cancelled_purchases:rgc_huawei:\(FakeHuawei.appID):china"

    static func owner(_ huawei: FakeHuawei, credentials: [String: String]? = nil) throws -> ClientWithStoreCredentials {
        ClientWithStoreCredentials(
            client: try HuaweiAppGalleryVerify.client(huawei),
            credentials: try credentials ?? huawei.clientSettings().credentials)
    }

    static func poller(_ huawei: FakeHuawei, retries: Int = 3) -> HuaweiCancelledPurchasesPoller {
        HuaweiCancelledPurchasesPoller(
            provider: HuaweiAppGalleryVerify.provider(huawei, retries: retries), interval: .seconds(1))
    }

    /// One run's notifications, as the core would be handed them.
    static func run(
        _ poller: HuaweiCancelledPurchasesPoller, _ huawei: FakeHuawei, run: MemoryPollRun
    ) async throws -> [StoreNotification] {
        let found = LockedBox<[StoreNotification]>([])
        try await poller.poll(owners: [try owner(huawei)], run: run) { batch in found.update { $0 += batch } }
        return found.get()
    }

    @Test func aRefundedPurchaseListedIsReadAgainAndHandedOverAsARefund() async throws {
        let huawei = try FakeHuawei()
        let refundedAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 7200).rounded())
        try huawei.addProduct(token: "tok.refund.p1", orderID: "order.refund.p1", state: 2)
        try huawei.addCancelled(
            token: "tok.refund.p1", orderID: "order.refund.p1", cancelledAt: refundedAt, source: 2, reason: 6)
        let poller = Self.poller(huawei)
        let found = try await Self.run(poller, huawei, run: MemoryPollRun())
        let refund = try #require(found.first)
        #expect(found.count == 1)
        #expect(refund.notificationID == "cancelled:order.refund.p1")
        #expect(refund.type == "CANCELLED_PURCHASE" && refund.subtype == "huawei")
        #expect(refund.event.kind == .refunded)
        #expect(refund.event.purchase?.transactionID == "order.refund.p1")
        #expect(refund.event.purchase?.revocationDate == refundedAt)  // Huawei's data has no cancel time: the list's
        #expect(
            refund.event.purchase?.revocationReasonCode == 6 && refund.event.purchase?.revocationReason == "chargeback")
        #expect(huawei.hits("verify") == 1, "the listed purchase was read again from the order service")
        #expect(!String(decoding: refund.decodedJSON, as: UTF8.self).contains("tok.refund.p1"))
        // Found again by another run (a by-hand one, its own cursors): the same event id, so recorded once.
        let again = try await Self.run(poller, huawei, run: MemoryPollRun(since: Date().addingTimeInterval(-86_400)))
        #expect(again.map(\.notificationID) == ["cancelled:order.refund.p1"])
        await huawei.shutdown()
    }

    @Test func pagesAreFollowedWithTheirContinuationToken() async throws {
        let huawei = try FakeHuawei()
        huawei.state.cancelledPageSize.set(2)
        for index in 1...5 {
            try huawei.addProduct(token: "tok.page.\(index)", orderID: "order.page.\(index)", state: 2)
            try huawei.addCancelled(
                token: "tok.page.\(index)", orderID: "order.page.\(index)",
                cancelledAt: Date().addingTimeInterval(Double(-4000 + index)))
        }
        let run = MemoryPollRun()
        let found = try await Self.run(Self.poller(huawei), huawei, run: run)
        #expect(found.map(\.notificationID) == (1...5).map { "cancelled:order.page.\($0)" })
        #expect(run.pages == 3 && huawei.hits("cancelled") == 3)
        let queries = huawei.cancelledQueries
        #expect(queries[0]["continuationToken"] == nil && queries[0]["type"] == "1")
        #expect(queries[1]["continuationToken"] != nil && queries[2]["continuationToken"] != nil)
        #expect(queries[1]["continuationToken"] != queries[2]["continuationToken"])
        await huawei.shutdown()
    }

    @Test func theCursorIsSavedAndTheNextRunStartsWhereTheLastEndedLessTheOverlap() async throws {
        let huawei = try FakeHuawei()
        let run = MemoryPollRun()
        let poller = Self.poller(huawei)
        _ = try await Self.run(poller, huawei, run: run)
        let first = try #require(huawei.cancelledQueries.first)
        let firstStart = try #require(Int64(first["startAt"] ?? "")),
            firstEnd = try #require(Int64(first["endAt"] ?? ""))
        #expect(firstEnd - firstStart >= 30 * 86_400_000 - 60_000, "a first run reads Huawei's month")
        #expect(try await run.cursor(Self.cursorKey) != nil)
        // Refunded after the first window closed: the next run finds it, from the saved cursor.
        try huawei.addProduct(token: "tok.later.1", orderID: "order.later.1", state: 2)
        // Listed a minute back: inside the overlap the next window re-reads.
        try huawei.addCancelled(
            token: "tok.later.1", orderID: "order.later.1", cancelledAt: Date().addingTimeInterval(-60))
        let found = try await Self.run(poller, huawei, run: run)
        let second = try #require(huawei.cancelledQueries.last)
        #expect(Int64(second["startAt"] ?? "") == firstEnd - 10 * 60 * 1000)
        #expect(found.map(\.notificationID) == ["cancelled:order.later.1"])
        await huawei.shutdown()
    }

    @Test func aRunStoppedMidWindowResumesFromItsSavedPage() async throws {
        let huawei = try FakeHuawei()
        huawei.state.cancelledPageSize.set(1)
        for index in 1...2 {
            try huawei.addProduct(token: "tok.resume.\(index)", orderID: "order.resume.\(index)", state: 2)
            try huawei.addCancelled(
                token: "tok.resume.\(index)", orderID: "order.resume.\(index)",
                cancelledAt: Date().addingTimeInterval(Double(-4000 + index)))
        }
        let run = MemoryPollRun()
        let poller = Self.poller(huawei, retries: 1)
        // The second page fails: the first page's refund is handed over and its token kept.
        let found = LockedBox<[String]>([])
        let owner = try Self.owner(huawei)
        await #expect(throws: (any Error).self) {
            try await poller.poll(owners: [owner], run: run) { batch in
                found.update { $0 += batch.map(\.notificationID) }
                huawei.failFirst("cancelled", [503])
            }
        }
        #expect(found.get() == ["cancelled:order.resume.1"])
        let saved = try #require(try await run.cursor(Self.cursorKey))
        #expect(saved.contains("pageToken"))
        try await poller.poll(owners: [owner], run: run) { batch in found.update { $0 += batch.map(\.notificationID) } }
        #expect(found.get() == ["cancelled:order.resume.1", "cancelled:order.resume.2"])
        #expect(huawei.cancelledQueries.last?["continuationToken"] != nil, "the run resumed on the saved page")
        await huawei.shutdown()
    }

    @Test(arguments: [FakeHuawei.CancelledPaging.repeatsToken, .emptyPagesWithTokens])
    func aPageTokenThatLeadsNowhereEndsTheWindowInsteadOfSpinning(paging: FakeHuawei.CancelledPaging) async throws {
        let huawei = try FakeHuawei()
        huawei.state.cancelledPaging.set(paging)
        try huawei.addProduct(token: "tok.stuck.1", orderID: "order.stuck.1", state: 2)
        try huawei.addCancelled(token: "tok.stuck.1", orderID: "order.stuck.1")
        let run = MemoryPollRun()
        let found = try await Self.run(Self.poller(huawei), huawei, run: run)
        #expect(Set(found.map(\.notificationID)) == ["cancelled:order.stuck.1"])
        #expect(
            huawei.hits("cancelled") <= 2,
            "stopped at the token that leads nowhere, not after 50 pages: \(huawei.hits("cancelled"))")
        let saved = try #require(try await run.cursor(Self.cursorKey))
        #expect(!saved.contains("pageToken"), "the window is closed, the next run starts a new one: \(saved)")
        await huawei.shutdown()
    }

    @Test func aSavedPageOlderThanHuaweiKeepsIsDroppedAndTheWindowReadAgain() async throws {
        let huawei = try FakeHuawei()
        let run = MemoryPollRun()
        // A run stopped mid-window two months ago: all of its window is older than the lookback.
        let nowMillis = Int64(Date().timeIntervalSince1970 * 1000)
        let stale =
            #"{"since":\#(nowMillis - 62 * 86_400_000),"until":\#(nowMillis - 60 * 86_400_000),"continuationToken":"cont.gone"}"#
        try await run.setCursor(Self.cursorKey, to: stale)
        try huawei.addProduct(token: "tok.stale.1", orderID: "order.stale.1", state: 2)
        try huawei.addCancelled(
            token: "tok.stale.1", orderID: "order.stale.1", cancelledAt: Date().addingTimeInterval(-3600))
        let found = try await Self.run(Self.poller(huawei), huawei, run: run)
        #expect(found.map(\.notificationID) == ["cancelled:order.stale.1"])
        let query = try #require(huawei.cancelledQueries.first)
        #expect(query["continuationToken"] == nil)
        #expect(
            (Int64(query["startAt"] ?? "") ?? 0) >= nowMillis - 30 * 86_400_000 - 60_000,
            "from the oldest Huawei keeps: \(query)")
        await huawei.shutdown()
    }

    @Test func aRateLimitIsSurfacedAsTheStoreAskingToWait() async throws {
        let huawei = try FakeHuawei()
        huawei.state.retryAfterSeconds.set(120)
        huawei.failFirst("cancelled", [429])
        let run = MemoryPollRun()
        do {
            _ = try await Self.run(Self.poller(huawei), huawei, run: run)
            Issue.record("a rate limit must fail the run")
        } catch {
            let wait = try #require(error as? any StoreAskedToWait, "\(error)")
            #expect(wait.retryAfter == .seconds(120))
            #expect("\(error)".contains("rate limited"), "\(error)")
        }
        #expect(try await run.cursor(Self.cursorKey) == nil, "the window is read again by the next run")
        await huawei.shutdown()
    }

    @Test func aRevokedAccessTokenIsReplacedOnceAndAWrongSecretFailsTheRunNamingTheSettings() async throws {
        let huawei = try FakeHuawei()
        huawei.failFirst("cancelled", [401])
        _ = try await Self.run(Self.poller(huawei), huawei, run: MemoryPollRun())
        #expect(huawei.hits("token") == 2 && huawei.hits("cancelled") == 2)
        let wrong = try Self.owner(huawei, credentials: [HuaweiAppGalleryProvider.Setting.appSecret: "wrong-secret"])
        do {
            try await Self.poller(huawei).poll(owners: [wrong], run: MemoryPollRun()) { _ in }
            Issue.record("a refused secret must fail the run")
        } catch {
            #expect("\(error)".contains("--huawei-app-secret") && !"\(error)".contains("wrong-secret"), "\(error)")
        }
        await huawei.shutdown()
    }

    @Test func aListedPurchaseHuaweiStillReadsPurchasedChangesNothing() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.kept.1", orderID: "order.kept.1", state: 0)
        try huawei.addCancelled(token: "tok.kept.1", orderID: "order.kept.1")
        try huawei.addCancelled(token: "tok.unknown.1", orderID: "order.unknown.1")  // Huawei no longer knows the token
        let run = MemoryPollRun()
        let found = try await Self.run(Self.poller(huawei), huawei, run: run)
        #expect(found.isEmpty)
        #expect(huawei.hits("verify") == 2, "both were read again")
        #expect(try await run.cursor(Self.cursorKey) != nil, "the window is done all the same")
        await huawei.shutdown()
    }

    /// A consumable confirmed and bought again is refunded: the order service no longer reads its
    /// token (12), and the list, Huawei's own authenticated answer, backs the refund by itself.
    @Test func aRefundedConsumableHuaweiNoLongerReadsIsBackedByTheListItself() async throws {
        let huawei = try FakeHuawei()
        let refundedAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 1800).rounded())
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        try huawei.addProduct(token: "tok.gone.1", orderID: "order.gone.1", kind: 0, purchaseTime: 1_716_389_123_000)
        let first = try #require(
            try await provider.verify(evidence: "tok.gone.1", context: HuaweiAppGalleryVerify.context(huawei)).first)
        try await provider.acknowledge(
            try #require(provider.acknowledgement(for: first, client: try HuaweiAppGalleryVerify.client(huawei))),
            credentials: try huawei.clientSettings().credentials)
        try huawei.addProduct(token: "tok.gone.2", orderID: "order.gone.2", kind: 0)
        try huawei.addCancelled(
            token: "tok.gone.1", orderID: "order.gone.1", cancelledAt: refundedAt, source: 2, reason: 6)
        let found = try await Self.run(Self.poller(huawei), huawei, run: MemoryPollRun())
        let refund = try #require(found.first)
        #expect(found.count == 1)
        #expect(refund.notificationID == "cancelled:order.gone.1" && refund.event.kind == .refunded)
        let purchase = try #require(refund.event.purchase)
        #expect(
            purchase.transactionID == first.transactionID && purchase.environment == first.environment
                && purchase.productID == "gems100")
        #expect(purchase.appIdentifier == FakeHuawei.package)
        #expect(purchase.revocationDate == refundedAt && purchase.revocationReason == "chargeback")
        #expect(purchase.storeAttributes["backed_by"] == "cancelled_list")
        #expect(huawei.hits("verify") == 2, "it was read again first")
        await huawei.shutdown()
    }

    @Test func aListedSubscriptionIsReadFromTheSubscriptionServiceWhenItsIdIsListed() async throws {
        let huawei = try FakeHuawei()
        let revokedAt = Int64(Date().addingTimeInterval(-600).timeIntervalSince1970 * 1000)
        try huawei.addSubscription(token: "tok.sub.c1", subscriptionID: "sub.c1", orderID: "order.sub.c1")
        try huawei.renewSubscription(
            token: "tok.sub.c1", orderID: "order.sub.c1.2",
            extra: ["cancelTime": revokedAt, "cancelReason": 0, "subIsvalid": false])
        try huawei.addCancelled(
            token: "tok.sub.c1", productID: "vip.monthly", orderID: "order.sub.c1.2", subscription: true,
            extra: ["subscriptionId": "sub.c1"])
        // Without its subscription id the order service refuses a subscription's token: nothing changes.
        try huawei.addCancelled(
            token: "tok.sub.c2", productID: "vip.monthly", orderID: "order.sub.c2", subscription: true)
        let found = try await Self.run(Self.poller(huawei), huawei, run: MemoryPollRun())
        let refund = try #require(found.first)
        #expect(found.count == 1)
        #expect(refund.notificationID == "cancelled:order.sub.c1.2" && refund.event.kind == .refunded)
        #expect(
            refund.event.purchase?.transactionID == "order.sub.c1.2"
                && refund.event.purchase?.originalTransactionID == "sub.c1")
        #expect(refund.event.purchase?.revocationDate == Date(timeIntervalSince1970: Double(revokedAt) / 1000))
        #expect(huawei.hits("subscription") == 1)
        await huawei.shutdown()
    }

    @Test func theIntervalAndSitesComeFromTheEnvironment() throws {
        let defaults = try HuaweiAppGalleryProvider.fromEnvironment([:]).registration
        #expect(defaults.poller?.interval == .seconds(3600))
        #expect(defaults.poller?.pollName == "huawei_appgallery.cancelled_purchases")
        #expect(defaults.subscriptionReader != nil)
        let off = try HuaweiAppGalleryProvider.fromEnvironment(["RECEIPTGATE_HUAWEI_CANCELLED_POLL_SECONDS": "0"])
            .registration
        #expect(off.poller == nil)
        let often = try HuaweiAppGalleryProvider.fromEnvironment(["RECEIPTGATE_HUAWEI_CANCELLED_POLL_SECONDS": "900"])
            .registration
        #expect(often.poller?.interval == .seconds(900))
        for (name, value) in [
            ("RECEIPTGATE_HUAWEI_CANCELLED_POLL_SECONDS", "-1"),
            ("RECEIPTGATE_HUAWEI_CANCELLED_POLL_SECONDS", "hourly"),
            ("RECEIPTGATE_HUAWEI_CANCELLED_POLL_SITES", "china,mars"),
        ] {
            #expect { _ = try HuaweiAppGalleryConfiguration.fromEnvironment([name: value]) } throws: { error in
                (error as? ConfigurationInvalid)?.variable == name
            }
        }
        #expect(throws: Never.self) {
            _ = try HuaweiAppGalleryConfiguration.fromEnvironment([
                "RECEIPTGATE_HUAWEI_CANCELLED_POLL_SITES": "china, apptouch"
            ])
        }
    }
}
