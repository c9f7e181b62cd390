import AppStore
import AppStoreTestSupport
import Foundation
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// A running service with the console switched on (admin token, admin listener of its own), the
/// App Store provider asking a local fake of Apple's Server API for orders, and a game server
/// whose webhook receiver refuses every delivery until told otherwise. Its ledger holds purchases
/// made through the public API only: one findable by its App Store order id, one refunded by
/// Apple's notification, one whose webhook delivery was given up, a duplicate and a refusal.
struct ConsoleFixture {
    static let adminToken = "console-admin-" + String(repeating: "t", count: 32)
    /// The fake Server API answers this order id with every production transaction it knows.
    static let orderID = "MQ5VLT9VXT"

    struct Purchase {
        let transactionID: String, playerID: String
        var json: [String: String] { ["transaction_id": transactionID, "player_id": playerID] }
    }

    let harness: VerifyHarness
    let apple: FakeAppStoreServerAPI
    let receiver: WebhookReceiver
    let receiverControl: WebhookReceiverControl
    let ordered = Purchase(transactionID: "2000000000008101", playerID: "player-ordered")
    let refunded = Purchase(transactionID: "2000000000008102", playerID: "player-refunded")
    let undelivered = Purchase(transactionID: "2000000000008103", playerID: "player-undelivered")
    /// The webhook event of `undelivered`, given up on (dead) while the receiver refused it.
    private(set) var undeliveredEventID = ""

    /// What the purchases above made `receiptgate_verifications_total` count: store, outcome (a
    /// regular expression the outcome must match whole) and count.
    let verificationsMade: [[String: any Sendable]] = [
        ["store": "app_store", "outcome": "verified", "count": 3],
        ["store": "app_store", "outcome": "duplicate", "count": 1],
        ["store": "app_store", "outcome": "refused:BUNDLE_ID_MISMATCH", "count": 1],
    ]

    var consoleURL: String { "http://127.0.0.1:\(harness.service.adminPort ?? -1)" }
    var apiURL: String { "http://127.0.0.1:\(harness.client.port)" }

    static func start() async throws -> ConsoleFixture {
        let apple = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        // Deliveries are given up one second after the event: the receiver's refusals end as dead
        // events at once, which nothing retries unless an operator redelivers them.
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(giveUpAfter: .seconds(1)), adminToken: adminToken,
            webhookURL: receiver.url, pki: apple.pki,
            appStore: { apple.appStoreConfiguration(trusting: $0) },
            configure: { $0.adminAddress = ListenAddress(host: "127.0.0.1", port: 0) })
        receiver.secret.set(harness.client.secret)
        var fixture = ConsoleFixture(
            harness: harness, apple: apple, receiver: receiver, receiverControl: try WebhookReceiverControl(receiver))
        do {
            try await fixture.makePurchases()
        } catch {
            fixture.stop()  // the test never gets the fixture to stop it
            throw error
        }
        return fixture
    }

    func stop() {
        harness.stop()
        let apple = apple, receiver = receiver, control = receiverControl
        Task.detached {
            await apple.shutdown()
            await receiver.server.shutdown()
            await control.server.shutdown()
        }
    }

    private mutating func makePurchases() async throws {
        // Known to Apple's Server API, so the order lookup finds it.
        try apple.add(ordered.transactionID, environment: "Production", ["productId": "gems100"])
        let orderedReceipt = try #require(apple.state.known.get()["Production"]?[ordered.transactionID])
        try await verify(orderedReceipt, for: ordered, duplicate: false)

        try await verify(try sign(refunded.transactionID), for: refunded, duplicate: false)
        let refund = try await NotificationsDriveTheLedger.notify(
            harness, type: "REFUND",
            transaction: [
                "transactionId": refunded.transactionID, "originalTransactionId": refunded.transactionID,
                "revocationDate": Int64(Date().timeIntervalSince1970 * 1000), "revocationReason": 1,
            ])
        try #require(refund.status == 200, "Apple's REFUND notification: \(refund.text)")
        let refundedRecord = try await NotificationsDriveTheLedger.transaction(harness, refunded.transactionID)
        try #require(refundedRecord["state"] as? String == "refunded", "\(refundedRecord)")

        let undeliveredReceipt = try sign(undelivered.transactionID)
        try await verify(undeliveredReceipt, for: undelivered, duplicate: false)
        try await verify(undeliveredReceipt, for: undelivered, duplicate: true)
        let foreign = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000008104", "bundleId": "com.example.other"]))
        let refused = try await harness.client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": foreign, "player_id": "player-foreign"])
        try #require(refused.status == 422, "another app's receipt: \(refused.text)")

        // Every event was tried and given up: nothing is left for the worker to send on its own.
        try await OutboxDrain.wait(harness.pool)
        let refusedDelivery = receiver.deliveries.get().first {
            $0.transactionID == undelivered.transactionID && $0.type == "transaction.verified"
        }
        undeliveredEventID = try #require(
            refusedDelivery, "the receiver was never offered the undelivered purchase's event"
        ).eventID
        try #require(receiver.acknowledged.isEmpty, "the receiver accepted a delivery while it was down")
    }

    private func sign(_ transactionID: String) throws -> String {
        try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": transactionID, "originalTransactionId": transactionID]))
    }

    private func verify(_ receipt: String, for purchase: Purchase, duplicate: Bool) async throws {
        let answer = try await harness.client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": purchase.playerID])
        try #require(answer.status == 200, "verify \(purchase.transactionID): \(answer.text)")
        try #require(
            try answer.json()["duplicate"] as? Bool == duplicate, "verify \(purchase.transactionID): \(answer.text)")
    }
}

extension FakeAppStoreServerAPI {
    /// The service's App Store settings for asking this fake: its team key, and its two listeners
    /// standing in for Apple's production and sandbox hosts.
    func appStoreConfiguration(trusting pki: AppleTestPKI) -> AppStoreConfiguration {
        var appStore = AppStoreConfiguration(trustRoots: [pki.root])
        appStore.serverAPIKey = .init(keyID: Self.keyID, issuerID: Self.issuerID, privateKey: teamKey)
        appStore.serverAPIProductionURL = "http://127.0.0.1:\(production.port)"
        appStore.serverAPISandboxURL = "http://127.0.0.1:\(sandbox.port)"
        return appStore
    }
}
