import Foundation
import ReceiptCore
import Testing
import Xsolla
import XsollaTestSupport

/// `POST /v1/verify` with a transaction id: read from the fake's transactions report.
@Suite struct XsollaVerify {
    static func context(productID: String? = nil, credentials: [String: String]? = nil) -> VerificationContext {
        let client = XsollaFixtures.client()
        return VerificationContext(
            appIdentifiers: [FakeXsolla.projectID], environments: [.production, .sandbox], productID: productID,
            client: client.client, credentials: credentials ?? client.credentials, evidenceKind: .transactionID)
    }

    static func refusal(_ body: () async throws -> Void) async -> StoreVerificationError? {
        do { try await body() } catch let error as StoreVerificationError { return error } catch { return nil }
        return nil
    }

    @Test func aPaidTransactionIsItsPurchases() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(
            FakeXsolla.record(transactionID: 940_001, player: "p", items: [("a", 1), ("b", 2)], dryRun: true),
            at: Date())
        let provider = XsollaFixtures.provider(xsolla)
        let all = try await provider.verify(evidence: "940001", context: Self.context())
        #expect(all.map(\.transactionID) == ["940001/a", "940001/b"])
        #expect(all.allSatisfy { $0.environment == .sandbox && $0.store == .xsolla })
        let one = try await provider.verify(evidence: "940001/b", context: Self.context())
        #expect(one.map(\.productID) == ["b"] && one.first?.quantity == 2)
        #expect(xsolla.queries.first?["transaction_id"] == "940001")
        #expect(all.allSatisfy { $0.buyer == "p" }, "the report's user names the buyer")
        await xsolla.shutdown()
    }

    /// One rule with the webhooks: every listed item is `<id>/<sku>`, a single one too, and the
    /// buyer is `user.external_id` where the report has it, else `user.id`.
    @Test func aSingleItemIsNamedAsTheWebhookNamesIt() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(
            FakeXsolla.record(transactionID: 940_006, player: "xsolla-7", externalPlayer: "player-7"), at: Date())
        try xsolla.list(FakeXsolla.record(transactionID: 940_007, player: "p", items: []), at: Date())
        let provider = XsollaFixtures.provider(xsolla)
        let found = try await provider.verify(evidence: "940006", context: Self.context())
        #expect(found.map(\.transactionID) == ["940006/gems.100"] && found.first?.productID == "gems.100")
        #expect(found.first?.buyer == "player-7")
        let itemless = await Self.refusal { _ = try await provider.verify(evidence: "940007", context: Self.context()) }
        #expect(itemless?.reason == "PURCHASE_NOT_FOUND", "its order_paid webhook names the items")
        await xsolla.shutdown()
    }

    @Test func whatIsNotPaidIsRefused() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(FakeXsolla.record(transactionID: 940_002, player: "p", status: "processing"), at: Date())
        let provider = XsollaFixtures.provider(xsolla)
        let pending = await Self.refusal { _ = try await provider.verify(evidence: "940002", context: Self.context()) }
        #expect(pending?.code == .verificationFailed && pending?.reason == "PURCHASE_NOT_COMPLETED")
        let unknown = await Self.refusal { _ = try await provider.verify(evidence: "940003", context: Self.context()) }
        #expect(unknown?.code == .verificationFailed && unknown?.reason == "PURCHASE_NOT_FOUND")
        let garbage = await Self.refusal { _ = try await provider.verify(evidence: "evt_1", context: Self.context()) }
        #expect(garbage?.code == .invalidField)
        await xsolla.shutdown()
    }

    @Test func aRefundedTransactionIsAnsweredRevoked() async throws {
        let xsolla = try FakeXsolla()
        try xsolla.list(FakeXsolla.record(transactionID: 940_004, player: "p", status: "refunded"), at: Date())
        let found = try await XsollaFixtures.provider(xsolla).verify(evidence: "940004", context: Self.context())
        #expect(found.first?.revocationDate != nil)
        await xsolla.shutdown()
    }

    @Test func refusedCredentialsAreTheVerifiersTrouble() async throws {
        let xsolla = try FakeXsolla()
        xsolla.state.apiKey.set("another key")
        let refusal = await Self.refusal {
            _ = try await XsollaFixtures.provider(xsolla).verify(evidence: "940005", context: Self.context())
        }
        #expect(refusal?.code == .verifierError && refusal?.reason == "XSOLLA_PERMISSION_DENIED")
        let missing = await Self.refusal {
            _ = try await XsollaFixtures.provider(xsolla).verify(
                evidence: "940005", context: Self.context(credentials: [:]))
        }
        #expect(missing?.reason == "XSOLLA_NOT_CONFIGURED")
        await xsolla.shutdown()
    }
}
