import AmazonAppstoreTestSupport
import Foundation
import TestSupport
import Testing

/// Amazon's Real-Time Notifications through the running service: a proven SNS notification moves
/// the ledger as RVS reads the receipt and tells the game server (webhook, refund callback) once;
/// a forged one changes nothing; a subscription confirmation's token reaches the operator.
@Suite struct AmazonAppstoreEndToEndNotifications {
    static let user = AmazonAppstoreEndToEnd.user

    static func waitUntil(
        _ condition: () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        try await WebhookDelivery.waitUntil(condition, sourceLocation: sourceLocation)
    }

    /// A verified purchase that RVS then reads as canceled (refunded), as before Amazon's push.
    static func refundedAfterVerifying(_ receipt: String, on harness: AmazonAppstoreHarness) async throws {
        try harness.rvs.addReceipt(receipt, userID: user)
        #expect(try await harness.verify(receipt).status == 200)
        try harness.rvs.addReceipt(
            receipt, userID: user, cancelDate: Date(timeIntervalSince1970: 1_716_400_000), cancelReason: 1)
    }

    @Test func aSignedRefundNotificationRefundsTellsTheGameServerOnceAndIsAppliedOnce() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try await Self.refundedAfterVerifying("r-refund", on: harness)
        let body = try harness.sns.notification(
            AmazonAppstoreHarness.news("CONSUMABLE_CANCELLED", receipt: "r-refund"), messageID: "sns-refund-1")
        let answer = try await harness.deliver(body)
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try answer.json()["duplicate"] as? Bool == false)
        #expect(try await harness.state("r-refund") == "refunded")
        try await Self.waitUntil {
            harness.receiver.bodies("/hooks").contains { $0["type"] as? String == "transaction.refunded" }
        }
        try await Self.waitUntil { !harness.receiver.bodies("/refunds").isEmpty }
        #expect(
            harness.receiver.bodies("/refunds").first?["transaction_id"] as? String == "r-refund",
            "\(harness.receiver.bodies("/refunds"))")
        #expect(harness.receiver.bodies("/refunds").first?["game_id"] as? Int == 42)
        // SNS delivers at least once: the same MessageId again is acknowledged and changes nothing.
        let redelivered = try await harness.deliver(body)
        #expect(redelivered.status == 200)
        #expect(try redelivered.json()["duplicate"] as? Bool == true)
        try await OutboxDrain.wait(harness.pool)
        #expect(
            try await harness.count("SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.refunded'") == 1)
        #expect(try await harness.count("SELECT count(*) AS n FROM outbox WHERE target = 'refund_callback'") == 1)
        #expect(harness.receiver.bodies("/refunds").count == 1)
        #expect(harness.receiver.bodies("/hooks").filter { $0["type"] as? String == "transaction.refunded" }.count == 1)
        // The refunded purchase is never answered as a success again.
        let again = try await harness.verify("r-refund")
        #expect(try again.json()["status"] as? String == "refunded", "\(again.text)")
    }

    @Test func aTamperedSignatureOrAForeignCertificateIsRefusedAndChangesNothing() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try await Self.refundedAfterVerifying("r-kept", on: harness)
        let genuine = try harness.sns.notification(
            AmazonAppstoreHarness.news("CONSUMABLE_CANCELLED", receipt: "r-other"), messageID: "sns-forged")
        // Signed for another receipt, edited to name ours.
        let news = String(
            decoding: try JSONSerialization.data(
                withJSONObject: AmazonAppstoreHarness.news("CONSUMABLE_CANCELLED", receipt: "r-kept"),
                options: [.sortedKeys]), as: UTF8.self)
        let tampered = try await harness.deliver(try FakeSNS.tampered(genuine, "Message", news))
        #expect((400..<500).contains(tampered.status), "\(tampered.text)")
        // Correctly signed, but by a certificate that is not at an allowed URL: never even fetched.
        let foreign = try FakeSNS()
        defer { Task.detached { await foreign.shutdown() } }
        let impostor = try await harness.deliver(
            try foreign.notification(AmazonAppstoreHarness.news("CONSUMABLE_CANCELLED", receipt: "r-kept")))
        #expect((400..<500).contains(impostor.status), "\(impostor.text)")
        #expect(foreign.certificateHits.get() == 0)
        #expect(try await harness.state("r-kept") == "active")
        #expect(try await harness.count("SELECT count(*) AS n FROM store_notifications") == 0)
        #expect(
            try await harness.count("SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.refunded'") == 0)
        // The genuine message, untouched, is accepted: the refusals above were about the forgery.
        #expect(try await harness.deliver(genuine).status == 200)
    }

    @Test func aSubscriptionConfirmationsTokenReachesTheOperator() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        let token =
            "2336412f37fb687f5d51e6e2425f004aed0e3a1a"
            + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let answer = try await harness.deliver(
            try harness.sns.subscriptionConfirmation(token: token, messageID: "sns-confirm"))
        #expect(answer.status == 200, "\(answer.text)")
        // In the log, at warning level, with what the Amazon console asks for.
        let line = try harness.log.captured.first { $0.contains(token) }.map(Binary.json)
        #expect(line?["level"] as? String == "warning", "\(line ?? [:])")
        #expect(line?["sns.token"] as? String == token)
        #expect(line?["sns.topic_arn"] as? String == FakeSNS.topicARN && line?["store"] as? String == "amazon_appstore")
        // Over the admin API: only with the admin token, filtered by type.
        #expect(try await RawHTTP.request(port: harness.service.port, path: "/admin/notifications").status == 401)
        let listed = try await harness.admin("/admin/notifications?store=amazon_appstore&type=SubscriptionConfirmation")
        #expect(listed.status == 200, "\(listed.text)")
        let notifications = try #require(try listed.json()["notifications"] as? [[String: Any]])
        #expect(notifications.count == 1)
        #expect(notifications.first?["notification_id"] as? String == "sns-confirm")
        #expect((notifications.first?["decoded"] as? [String: Any])?["Token"] as? String == token)
        #expect((notifications.first?["received_at"] as? String)?.hasSuffix("Z") == true)
        let otherType = try await harness.admin("/admin/notifications?type=CONSUMABLE_CANCELLED")
        #expect((try otherType.json()["notifications"] as? [[String: Any]])?.isEmpty == true, "\(otherType.text)")
        // And from the CLI, on the same database.
        let cli = try await Binary.run(["notifications", "list", "--type", "SubscriptionConfirmation"], harness.cli)
        #expect(cli.status == 0, "\(cli.stderr)")
        let printed = try #require(try Binary.json(cli.stdout)["notifications"] as? [[String: Any]])
        #expect((printed.first?["decoded"] as? [String: Any])?["Token"] as? String == token)
        let otherStore = try await Binary.run(["notifications", "list", "--store", "google_play"], harness.cli)
        #expect(
            (try Binary.json(otherStore.stdout)["notifications"] as? [[String: Any]])?.isEmpty == true,
            "\(otherStore.stdout)")
    }
}
