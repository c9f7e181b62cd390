import AlogameGateway
import AppStore
import Foundation
import PluginTestSupport
import ReceiptCore
import Testing

/// The Alogame gateway as a plugin: its wire format against an in-process fake core (no
/// Postgres, no HTTP). The end-to-end suites in ReceiptGateTests drive it over HTTP.
@Suite struct AlogameGatewayPlugin {
    static let client = ClientInfo(
        clientID: "rgc_game", gameID: 42, appIdentifiers: [AppStoreProvider.bundleIDKind.name: ["com.example.game"]],
        environments: [.production, .sandbox])

    static func core() -> FakeCore {
        let core = FakeCore()
        core.clients = [client]
        var purchase = VerifiedPurchase(store: .appStore, environment: .sandbox, transactionID: "2000000000000777")
        purchase.originalTransactionID = "2000000000000777"
        purchase.productID = "gems100"
        purchase.kind = .consumable
        purchase.quantity = 1
        purchase.priceMilliunits = 990
        purchase.currency = "USD"
        purchase.storefront = "USA"
        purchase.purchaseDate = Date(timeIntervalSince1970: 1_780_000_000)
        purchase.ownership = .purchased
        core.add(evidence: "jws-777", proves: purchase)
        return core
    }

    static func verify(_ core: FakeCore, _ body: [String: Any]) async throws -> RouteResponse {
        await core.call(
            AlogameGateway(), "POST", "/iap/gateway/verify", body: try JSONSerialization.data(withJSONObject: body),
            signedAs: client)
    }

    @Test func successThenARetryOfTheSameRequestIsADuplicate() async throws {
        let core = Self.core()
        let body: [String: Any] = ["receipt": "jws-777", "product_id": "gems100", "os_id": 2, "player_id": "p1"]
        let first = try await Self.verify(core, body)
        #expect(first.status == 200)
        #expect(first.object["success"] as? Bool == true)
        #expect(first.object["transaction_id"] as? String == "2000000000000777")
        let info = try #require(first.object["receipt_info"] as? [String: Any])
        #expect(info["platform"] as? String == "ios")
        #expect(info["environment"] as? String == "Sandbox")
        #expect(info["type"] as? String == "Consumable")
        #expect(info["in_app_ownership_type"] as? String == "PURCHASED")
        #expect(info["purchase_date_ms"] as? Int == 1_780_000_000_000)
        #expect(core.recordedRequests.first?.playerID == "p1")

        let retried = try await Self.verify(core, body)
        #expect(retried.status == 409)
        #expect(retried.object["error"] as? String == "DUPLICATE_TRANSACTION")
        #expect(retried.object["success"] as? Bool == false)
    }

    @Test(
        arguments: [
            ([:], 400, "MISSING_FIELDS"),
            (["receipt": "jws-777", "product_id": "gems100"], 400, "MISSING_FIELDS"),
            (["receipt": "jws-777", "product_id": "gems100", "os_id": 3], 400, "INVALID_OS_ID"),
            (["receipt": "jws-777", "product_id": "gems100", "os_id": "2"], 400, "INVALID_OS_ID"),
            (["receipt": "jws-777", "product_id": "gems500", "os_id": 2], 422, "PRODUCT_MISMATCH"),
            (["receipt": "unknown", "product_id": "gems100", "os_id": 2], 422, "VERIFICATION_FAILED"),
        ] as [([String: any Sendable], Int, String)])
    func refusalsFollowTheSeedsTable(body: [String: any Sendable], status: Int, code: String) async throws {
        let response = try await Self.verify(Self.core(), body)
        #expect(response.status == status)
        #expect(response.object["error"] as? String == code)
        #expect(response.object["message"] is String)
    }

    @Test func theCoresRefusalsUseTheGatewaysEnvelope() {
        let limited = AlogameGateway().render(RouteRefusal(code: .rateLimited, message: "slow down", retryAfter: 7))
        #expect(limited.status == 429)
        #expect(limited.object["error"] as? String == "RATE_LIMITED")
        #expect(limited.object["success"] as? Bool == false)
        let unauthorized = AlogameGateway().render(RouteRefusal(code: .unauthorized, message: "bad signature"))
        #expect(unauthorized.status == 401)
        #expect(unauthorized.object["error"] as? String == "UNAUTHORIZED")
    }

    @Test func refundCallbacksAreTheAlogameFormat() throws {
        let renderer = try #require(AlogameGateway().refundCallbacks)
        #expect(renderer.format == "alogame")
        let body = try renderer.refundCallbackBody(
            RefundEvent(
                transactionID: "2000000000000777", productID: "gems100",
                revocationDate: Date(timeIntervalSince1970: 1_780_000_000.5), revocationReasonCode: 1, gameID: 42))
        let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        #expect(object["transaction_id"] as? String == "2000000000000777")
        #expect(object["revocation_date"] as? Int == 1_780_000_000_500)
        #expect(object["revocation_reason"] as? Int == 1)
        #expect(object["game_id"] as? Int == 42)
        #expect(
            Set(object.keys) == ["transaction_id", "product_id", "revocation_date", "revocation_reason", "game_id"])
    }

    @Test func lookupIsIdempotentAndReportsTheLedger() async throws {
        let core = Self.core()
        _ = try await Self.verify(core, ["receipt": "jws-777", "product_id": "gems100", "os_id": 2])
        core.orders["MQ1234XYZ"] = StoreOrder(
            found: true, environment: .production,
            entries: [
                .init(transactionID: "2000000000000777", productID: "gems100", decodeFailed: false),
                .init(transactionID: "2000000000000888", productID: "gems100", decodeFailed: false),
            ])
        let body = try JSONSerialization.data(withJSONObject: ["order_id": "MQ1234XYZ"])
        let first = await core.call(
            AlogameGateway(), "POST", "/iap/gateway/lookup-receipt", body: body, signedAs: Self.client)
        let again = await core.call(
            AlogameGateway(), "POST", "/iap/gateway/lookup-receipt", body: body, signedAs: Self.client)
        #expect(first.status == 200)
        #expect(first.body == again.body)
        let entries = try #require(first.object["transactions"] as? [[String: Any]])
        let gateways = entries.compactMap { $0["gateway"] as? [String: Any] }
        #expect(gateways.map { $0["found"] as? Bool } == [true, false])
        #expect(gateways[0]["current_state"] as? String == "gateway_verified")
        #expect(gateways[1]["reason"] as? String == "NEVER_RECEIVED_BY_GATEWAY")
    }

    /// `last_error_code` / `last_error_message` are the last refused /verify of that transaction,
    /// as it was answered; a transaction never refused keeps them null.
    @Test func lookupShowsWhyATransactionWasRefused() async throws {
        let core = Self.core()
        let wrongProduct = try await Self.verify(core, ["receipt": "jws-777", "product_id": "gems500", "os_id": 2])
        #expect(wrongProduct.status == 422)
        core.orders["MQ1234XYZ"] = StoreOrder(
            found: true, environment: .production,
            entries: [
                .init(transactionID: "2000000000000777", productID: "gems100", decodeFailed: false),
                .init(transactionID: "2000000000000888", productID: "gems100", decodeFailed: false),
            ])
        let body = try JSONSerialization.data(withJSONObject: ["order_id": "MQ1234XYZ"])
        let lookup = await core.call(
            AlogameGateway(), "POST", "/iap/gateway/lookup-receipt", body: body, signedAs: Self.client)
        let gateways = try #require(lookup.object["transactions"] as? [[String: Any]]).compactMap {
            $0["gateway"] as? [String: Any]
        }
        #expect(gateways.count == 2)
        #expect(gateways[0]["found"] as? Bool == false)
        #expect(gateways[0]["last_error_code"] as? String == "PRODUCT_MISMATCH")
        #expect(gateways[0]["last_error_message"] as? String == wrongProduct.object["message"] as? String)
        #expect(gateways[1]["last_error_code"] is NSNull)
        #expect(gateways[1]["last_error_message"] is NSNull)
    }
}
