import AlogameGateway
import Foundation
import GooglePlayTestSupport
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A refund callback body that cannot be encoded is never queued in its place: the refund waits,
/// uncommitted, and Google's push is answered 503 so that Pub/Sub sends it again.
@Suite struct UnencodableRefundCallback {
    /// A dialect whose refund callbacks carry a number JSON cannot hold.
    struct Broken: DialectProvider {
        struct Callbacks: RefundCallbackRenderer {
            let format = "broken"
            struct Body: Encodable { let transaction_id: String; let ratio: Double }
            func refundCallbackBody(_ event: RefundEvent) throws -> Data {
                try RouteResponse.encodedJSON(Body(transaction_id: event.transactionID, ratio: .nan))
            }
        }
        let name = "broken"
        var refundCallbacks: (any RefundCallbackRenderer)? { Callbacks() }
        func routes(core: any DialectCore) -> [Route] { [] }
        func render(_ refusal: RouteRefusal) -> RouteResponse { .json(["error": refusal.code.rawValue], status: 400) }
    }

    @Test func nothingIsQueuedAndTheRefundWaitsForAnEncodableCallback() async throws {
        let harness = try await GooglePlayHarness.start(dialects: [AlogameGateway(), Broken()])
        defer { harness.stop() }
        let order = "GPA.8888-0000-0000-00001"
        try harness.google.addProduct(token: "tok-broken", orderID: order)
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "google_play", "receipt": "tok-broken"]).status
                == 200)
        var settings = ClientSettings()
        settings.refundCallbackFormat = "broken"
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
        // Google refunds it and lists the void: a push Google confirms.
        try harness.google.addProduct(token: "tok-broken", orderID: order, state: 1)
        try harness.google.addVoided(token: "tok-broken", orderID: order, reason: 1, voidedAt: Date())
        let void: [String: Any] = [
            "version": "1.0", "packageName": "com.example.game",
            "eventTimeMillis": String(Int64(Date().timeIntervalSince1970 * 1000)),
            "voidedPurchaseNotification": [
                "purchaseToken": "tok-broken", "orderId": order, "productType": 2, "refundType": 1,
            ],
        ]
        func count(_ query: PostgresQuery) async throws -> Int {
            try await harness.pool.query(query)[0].decode("n", as: Int.self)
        }

        #expect(try await harness.push(void, messageID: "pubsub-broken").status == 503)
        #expect(try await count("SELECT count(*) AS n FROM outbox WHERE target = 'refund_callback'") == 0)
        #expect(
            try await count(
                "SELECT count(*) AS n FROM store_notifications WHERE notification_id = \("voided:" + order)") == 0)
        #expect(try await harness.transaction(order)?.decode("state", as: String.self) == "active")

        // The client back on a format that encodes: Pub/Sub's next try applies the refund, once.
        settings.refundCallbackFormat = "alogame"
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
        #expect(try await harness.push(void, messageID: "pubsub-broken").status == 200)
        #expect(try await harness.transaction(order)?.decode("state", as: String.self) == "refunded")
        try await GooglePlayEndToEnd.waitUntil { !harness.receiver.bodies("/refunds").isEmpty }
        #expect(harness.receiver.bodies("/refunds").map { $0["transaction_id"] as? String } == [order])
    }
}
