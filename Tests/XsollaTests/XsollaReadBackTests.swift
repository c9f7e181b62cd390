import Foundation
import ReceiptCore
import Testing
import Xsolla
import XsollaTestSupport

/// A payment or refund webhook read back from the transactions report before the ledger moves:
/// Xsolla's signature carries no time, so a replayed one is believed only as far as the report
/// still says it.
@Suite struct XsollaReadBack {
    static let client = XsollaFixtures.client(reportAccess: true)

    @Test func aPaymentTheReportListsAsPaidIsRecorded() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(FakeXsolla.record(transactionID: 980_001, player: "p"), at: Date())
        let result = await XsollaFixtures.receive(
            XsollaFixtures.provider(xsolla), try FakeXsolla.payment(transactionID: 980_001, player: "p"),
            client: Self.client)
        #expect(result.notifications.map(\.notificationID) == ["payment:980001/gems.100"])
        #expect(xsolla.queries.map { $0["transaction_id"] } == ["980001"])
        await xsolla.shutdown()
    }

    /// The report may lag behind a fresh payment: a signed webhook it does not list yet is sent
    /// again by Xsolla, never answered as done and lost.
    @Test func aWebhookTheReportDoesNotListYetIsAskedAgain() async throws {
        let xsolla = try FakeXsolla()
        let provider = XsollaFixtures.provider(xsolla)
        let payment = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 980_002, player: "p"), client: Self.client)
        #expect(payment.notifications.isEmpty && payment.refusal?.kind == .retryable)
        #expect(payment.refusal?.reason == "TRANSACTION_NOT_IN_REPORT")
        #expect(payment.answer?.status == 500)
        let refund = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 980_002, player: "p", type: "refund", refundCode: 1),
            client: Self.client)
        #expect(refund.refusal?.reason == "TRANSACTION_NOT_IN_REPORT")
        await xsolla.shutdown()
    }

    @Test(arguments: [429, 500, 401])
    func aReportThatCannotBeReadAsksXsollaToSendAgain(_ status: Int) async throws {
        let xsolla = try FakeXsolla()
        xsolla.failFirst(Array(repeating: status, count: 5))
        try xsolla.list(FakeXsolla.record(transactionID: 980_003, player: "p"), at: Date())
        let result = await XsollaFixtures.receive(
            XsollaFixtures.provider(xsolla), try FakeXsolla.payment(transactionID: 980_003, player: "p"),
            client: Self.client)
        #expect(result.notifications.isEmpty && result.refusal?.kind == .retryable)
        #expect(result.answer?.status == 500 && XsollaFixtures.code(result.answer) == "SERVER_ERROR")
        await xsolla.shutdown()
    }

    @Test func aPaymentReplayedAfterItsRefundGrowsNothing() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(FakeXsolla.record(transactionID: 980_004, player: "p", status: "refunded"), at: Date())
        let provider = XsollaFixtures.provider(xsolla)
        let replay = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 980_004, player: "p"), client: Self.client)
        #expect(replay.notifications.isEmpty && replay.refusal?.reason == "REFUNDED_SINCE")
        let refund = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 980_004, player: "p", type: "refund", refundCode: 1),
            client: Self.client)
        #expect(refund.notifications.map(\.notificationID) == ["refund:980004/gems.100"])
        await xsolla.shutdown()
    }

    @Test func aRefundTheReportDoesNotListYetIsSentAgain() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(FakeXsolla.record(transactionID: 980_005, player: "p"), at: Date())
        let provider = XsollaFixtures.provider(xsolla)
        let refund = await XsollaFixtures.receive(
            provider, try FakeXsolla.payment(transactionID: 980_005, player: "p", type: "refund", refundCode: 1),
            client: Self.client)
        #expect(refund.refusal?.kind == .retryable && refund.answer?.status == 500)
        let partial = await XsollaFixtures.receive(
            provider,
            try FakeXsolla.payment(transactionID: 980_005, player: "p", type: "partial_refund", refundCode: 1),
            client: Self.client)
        #expect(partial.notifications.first?.event.kind == .partiallyRefunded, "a partial refund leaves it paid")
        await xsolla.shutdown()
    }

    @Test func aPaymentNotPaidInTheReportYetIsSentAgain() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(FakeXsolla.record(transactionID: 980_006, player: "p", status: "processing"), at: Date())
        let result = await XsollaFixtures.receive(
            XsollaFixtures.provider(xsolla), try FakeXsolla.payment(transactionID: 980_006, player: "p"),
            client: Self.client)
        #expect(result.refusal?.kind == .retryable)
        await xsolla.shutdown()
    }
}
