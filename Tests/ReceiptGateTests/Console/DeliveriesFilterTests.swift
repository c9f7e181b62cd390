import AppStoreTestSupport
import Foundation
import TestSupport
import Testing

/// The Deliveries page's filter shows by example what it takes: an event type the service sends,
/// which, typed in, finds that delivery.
@Suite struct DeliveriesFilter {
    static let adminToken = "deliveries-admin-" + String(repeating: "d", count: 32)

    @Test func theEventTypeExampleFindsItsDeliveries() async throws {
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(), adminToken: Self.adminToken, webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let id = "2000000000007001"
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id]))
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        #expect(
            try await NotificationsDriveTheLedger.notify(
                harness, type: "REFUND",
                transaction: [
                    "transactionId": id, "originalTransactionId": id,
                    "revocationDate": Int64(Date().timeIntervalSince1970 * 1000),
                ]
            ).status == 200)
        try await WebhookDelivery.waitUntil { receiver.acknowledged.count >= 2 }

        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.adminToken)
        let page = try await browser.get("/console/deliveries?status=all").text
        let example = try #require(
            page.firstMatch(of: /placeholder="e\.g\. ([a-z_.]+)"/).map { String($0.1) }, "no example in \(page)")
        #expect(receiver.acknowledged.map(\.type).contains(example), "\(example) is not an event type the service sent")
        let filtered = try await browser.get("/console/deliveries?status=all&type=\(example)").text
        for delivery in receiver.acknowledged {
            #expect(
                filtered.contains(delivery.eventID) == (delivery.type == example),
                "\(delivery.type) \(delivery.eventID) shown or left out wrongly by the filter \(example)")
        }
        await receiver.server.shutdown()
    }
}
