import AlogameGateway
import AppStore
import Foundation
import PluginTestSupport
import ReceiptCore
import Testing

/// The gateway's "deliver" answer follows the state the ledger's rules give a purchase, through
/// the fake core exactly as through the service: an expired subscription or a purchase refunded
/// since it was first verified is refused, not delivered again.
@Suite struct AlogameGatewayLedgerState {
    static let client = AlogameGatewayPlugin.client

    static func purchase(_ id: String) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(store: .appStore, environment: .sandbox, transactionID: id)
        purchase.originalTransactionID = id
        purchase.productID = "vip.monthly"
        purchase.kind = .autoRenewableSubscription
        purchase.purchaseDate = Date().addingTimeInterval(-40 * 86_400)
        purchase.expiresDate = Date().addingTimeInterval(3_600)
        return purchase
    }

    static func verify(_ core: FakeCore, receipt: String) async throws -> RouteResponse {
        let body: [String: Any] = ["receipt": receipt, "product_id": "vip.monthly", "os_id": 2, "player_id": "p1"]
        return await core.call(
            AlogameGateway(), "POST", "/iap/gateway/verify", body: try JSONSerialization.data(withJSONObject: body),
            signedAs: client)
    }

    @Test func anExpiredSubscriptionIsRefusedAsExpired() async throws {
        let core = FakeCore()
        core.clients = [Self.client]
        var lapsed = Self.purchase("2000000000005001")
        lapsed.expiresDate = Date().addingTimeInterval(-60)
        core.add(evidence: "jws-lapsed", proves: lapsed)

        let response = try await Self.verify(core, receipt: "jws-lapsed")
        #expect(response.status == 422)
        #expect(response.object["error"] as? String == "VERIFICATION_FAILED")
        #expect(response.object["message"] as? String == "transaction 2000000000005001 is expired")
        let recorded = try await core.transaction(
            store: .appStore, transactionID: "2000000000005001", client: Self.client)
        #expect(recorded?.state == .expired)
    }

    @Test func aPurchaseRefundedSinceItWasVerifiedIsRefusedAndKeptRefunded() async throws {
        let core = FakeCore()
        core.clients = [Self.client]
        let active = Self.purchase("2000000000005002")
        core.add(evidence: "jws-active", proves: active)
        var refunded = active
        refunded.revocationDate = Date().addingTimeInterval(-60)
        refunded.revocationReason = "refunded_due_to_issue"
        core.add(evidence: "jws-refunded", proves: refunded)

        #expect(try await Self.verify(core, receipt: "jws-active").status == 200)
        // The player's client presents the purchase again after Apple refunded it (a notification missed).
        let again = try await Self.verify(core, receipt: "jws-refunded")
        #expect(again.status == 422)
        #expect(again.object["message"] as? String == "transaction 2000000000005002 is refunded")
        let recorded = try await core.transaction(
            store: .appStore, transactionID: "2000000000005002", client: Self.client)
        #expect(recorded?.state == .refunded)
        #expect(recorded?.revocationReason == "refunded_due_to_issue")

        // Old evidence from before the refund does not bring it back.
        #expect(try await Self.verify(core, receipt: "jws-active").status == 422)
    }

    @Test func aLaterExpiryLeavesARefundRefunded() async throws {
        let core = FakeCore()
        core.clients = [Self.client]
        core.add(evidence: "jws-active", proves: Self.purchase("2000000000005003"))
        #expect(try await Self.verify(core, receipt: "jws-active").status == 200)
        core.tell(.refunded, transactionID: "2000000000005003")
        core.tell(.expired, transactionID: "2000000000005003")
        let recorded = try await core.transaction(
            store: .appStore, transactionID: "2000000000005003", client: Self.client)
        #expect(recorded?.state == .refunded)
    }
}
