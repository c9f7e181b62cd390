import AppStore
import AppStoreTestSupport
import Foundation
import GooglePlay
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// Apple's consumption requests answered with what the game reported: a local fake of the App
/// Store Server API (checking the bearer JWT as Apple does, and Send Consumption Information's
/// body), Apple-signed notifications pushed to the service, a real Postgres.
@Suite struct AppleConsumptionRequests {
    static let id = "2000000000008001"
    static let adminToken = "refunds-admin-" + String(repeating: "r", count: 32)

    static func start(
        _ fake: FakeAppStoreServerAPI, receiver: WebhookReceiver, delay: Int = 3600, deliveryURL: String? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> VerifyHarness {
        let harness = try await VerifyHarness.start(
            environments: [.sandbox], outbox: VerifyHarness.fastOutbox(), adminToken: adminToken,
            webhookURL: receiver.url, deliveryURL: deliveryURL, pki: fake.pki,
            appStore: { pki in
                var appStore = AppStoreConfiguration(trustRoots: [pki.root])
                appStore.serverAPIKey = .init(
                    keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID,
                    privateKey: fake.teamKey)
                appStore.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
                appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
                appStore.reconcileInterval = nil
                return appStore
            },
            configure: { configuration in
                configuration.refundReviewDelaySeconds = delay
                configuration.quietSubscriptions.intervalSeconds = 0
            }, now: now)
        receiver.secret.set(harness.client.secret)
        return harness
    }

    static func gems(_ id: String = id) -> [String: any Sendable] {
        [
            "transactionId": id, "originalTransactionId": id, "environment": "Sandbox", "type": "Consumable",
            "productId": "gems.100",
        ]
    }

    /// Apple knows the transaction (its API answers for it) whether or not the ledger does.
    static func appleKnows(_ fake: FakeAppStoreServerAPI, _ transaction: [String: any Sendable]) throws {
        let signed = try fake.pki.sign(AppleTestPKI.transaction(transaction))
        fake.state.known.update { $0["Sandbox", default: [:]][transaction["transactionId"] as? String ?? ""] = signed }
    }

    /// Apple's `CONSUMPTION_REQUEST` for `transaction`, pushed; signed `signedAgo` ms in the past.
    @discardableResult
    static func pushRequest(
        _ harness: VerifyHarness, _ fake: FakeAppStoreServerAPI, _ transaction: [String: any Sendable],
        type: String = "CONSUMPTION_REQUEST",
        uuid: String = UUID().uuidString.lowercased(), signedAgo: Int64 = 0
    ) async throws -> RawHTTP.Response {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let data: [String: any Sendable] = [
            "environment": "Sandbox", "bundleId": "com.example.game", "consumptionRequestReason": "UNINTENDED_PURCHASE",
            "signedTransactionInfo": try fake.pki.sign(AppleTestPKI.transaction(transaction)),
        ]
        let signed = try fake.pki.sign([
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": now - signedAgo,
            "data": data,
        ])
        let answer = try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/v1/notifications/app-store",
            body: Data(#"{"signedPayload":"\#(signed)"}"#.utf8))
        #expect(answer.status == 200, "\(answer.text)")
        return answer
    }

    static func setPolicy(_ harness: VerifyHarness, consent: Bool, otherwise: String? = nil) async throws {
        var settings = ClientSettings()
        settings.settings[Client.consumptionConsentSetting] = .some(consent ? ["on"] : nil)
        if let otherwise { settings.settings[Client.refundOtherwiseSetting] = [otherwise] }
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
    }

    /// The delay has passed: the waiting answer is due now (the test does not wait an hour).
    static func answerDueNow(_ harness: VerifyHarness) async throws {
        try await harness.pool.execute(
            "UPDATE outbox SET next_attempt_at = now() WHERE target = 'refund_answer' AND status = 'pending'")
    }

    static func request(_ harness: VerifyHarness) async throws -> (status: String, outcome: String?, sent: String?)? {
        try await harness.pool.query(
            "SELECT status, outcome, sent_body::text AS sent FROM refund_requests ORDER BY id DESC LIMIT 1"
        ).first.map {
            (
                try $0.decode("status", as: String.self), try $0.decode("outcome", as: String?.self),
                try $0.decode("sent", as: String?.self)
            )
        }
    }

    @Test func aDeliveredMostlyConsumedPurchaseIsAnsweredOnceWithItsConsumptionAndDecline() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        try await Self.setPolicy(harness, consent: true)
        try Self.appleKnows(fake, Self.gems())
        #expect(try await NotificationHistoryReconciliation.verify(harness, Self.gems()).status == 200)
        let reported = try await harness.client.post(
            "/v1/transactions/app_store/\(Self.id)/consumption",
            json: [
                "delivered": true, "consumed_percent": 80,
                "usage_events": [["at_ms": 1_796_000_000_000, "description": "spent on a sword"]],
            ],
            version: "2")
        #expect(reported.status == 200, "\(reported.text)")
        #expect((try reported.json()["consumption"] as? [String: Any])?["consumed_percent"] as? Double == 80)

        let uuid = UUID().uuidString.lowercased()
        try await Self.pushRequest(harness, fake, Self.gems(), uuid: uuid)
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "refund.requested" } }
        #expect(fake.state.consumptionAnswers.get().isEmpty, "the answer waits for the delay")
        try await Self.answerDueNow(harness)
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "answered" }
        let answers = fake.state.consumptionAnswers.get()
        #expect(answers.count == 1)
        #expect(answers.first?.transactionID == Self.id)
        #expect(
            answers.first?.body == [
                "customerConsented": "1", "sampleContentProvided": "0", "deliveryStatus": "DELIVERED",
                "consumptionPercentage": "80000", "refundPreference": "DECLINE",
            ], "\(answers)")
        #expect(
            try await Self.request(harness)?.sent?.contains(#""refundPreference": "DECLINE""#) == true,
            "what was sent is kept")

        // The same request told again, and the outbox message re-run: one answer.
        try await Self.pushRequest(harness, fake, Self.gems(), uuid: uuid)
        try await harness.pool.execute(
            "UPDATE outbox SET status = 'pending', is_head = true, next_attempt_at = now() WHERE target = 'refund_answer'"
        )
        try await WebhookDelivery.waitUntil {
            try await harness.count("outbox WHERE target = 'refund_answer' AND status = 'delivered' AND attempts = 2")
                == 1
        }
        #expect(fake.state.consumptionAnswers.get().count == 1)
        #expect(receiver.acknowledged.filter { $0.type == "refund.requested" }.count == 1)

        // Apple declined the refund: the outcome is joined to the request.
        try await Self.pushRequest(harness, fake, Self.gems(), type: "REFUND_DECLINED")
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.outcome == "declined" }
        let metrics = try await RawHTTP.request(port: harness.service.port, path: "/metrics").text
        #expect(
            metrics.contains(#"receiptgate_refund_answers_total{store="app_store",preference="decline"} 1"#),
            "\(metrics)")
        #expect(
            metrics.contains(#"receiptgate_refund_requests{store="app_store",status="answered",outcome="declined"} 1"#))
        // The operator sees it: answered, with what was decided, and the store's outcome.
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.adminToken)
        let page = try await browser.get("/console/refunds").text
        #expect(
            page.contains(#"<td class="status">answered</td>"#) && page.contains("decline, delivered, 80.0 % consumed")
                && page.contains(#"<td class="outcome">declined</td>"#), "\(page)")
        #expect(page.contains(#"<td class="declined">1</td>"#), "the refund rate counts the decision")
        // The purchase's own page shows the request, its answer, and the game's consumption report.
        let purchase = try await browser.get("/console/purchases/app_store/\(Self.id)").text
        #expect(
            purchase.contains(#"<table id="purchase-refund-requests">"#)
                && purchase.contains("decline, delivered, 80.0 % consumed"), "\(purchase)")
        #expect(purchase.contains(#"<dd id="consumption-consumed">80.0 %</dd>"#))
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func aReportInsideTheDelayChangesTheAnswerAndWithoutConsentAppleIsNotAnswered() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        try await Self.setPolicy(harness, consent: true)
        try Self.appleKnows(fake, Self.gems())
        #expect(try await NotificationHistoryReconciliation.verify(harness, Self.gems()).status == 200)
        try await Self.pushRequest(harness, fake, Self.gems())
        // Within the delay the game says the gems never arrived.
        let reported = try await harness.client.post(
            "/v1/transactions/app_store/\(Self.id)/consumption", json: ["delivered": false], version: "2")
        #expect(reported.status == 200, "\(reported.text)")
        try await Self.answerDueNow(harness)
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "answered" }
        #expect(
            fake.state.consumptionAnswers.get().map(\.body) == [
                [
                    "customerConsented": "1", "sampleContentProvided": "0",
                    "deliveryStatus": "UNDELIVERED_OTHER", "refundPreference": "GRANT_FULL",
                ]
            ])

        // Without consent (the default) Apple takes no answer: the request is left to Apple, not sent.
        try await Self.setPolicy(harness, consent: false)
        let other = Self.gems("2000000000008002")
        try Self.appleKnows(fake, other)
        #expect(try await NotificationHistoryReconciliation.verify(harness, other).status == 200)
        try await Self.pushRequest(harness, fake, other)
        try await Self.answerDueNow(harness)
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "not_answered" }
        #expect(fake.state.consumptionAnswers.get().count == 1)
        let note = try await harness.pool.query("SELECT note FROM refund_requests WHERE status = 'not_answered'").first?
            .decode("note", as: String?.self)
        #expect(note?.contains("--consumption-consent") == true, "\(note ?? "")")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func aRequestForATransactionTheLedgerDoesNotHoldIsAnsweredFromPolicyAlone() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(fake, receiver: receiver, delay: 0)
        defer { harness.stop() }
        try await Self.setPolicy(harness, consent: true, otherwise: "neutral")
        let unknown = Self.gems("2000000000008099")
        try Self.appleKnows(fake, unknown)
        try await Self.pushRequest(harness, fake, unknown)
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "answered" }
        #expect(
            fake.state.consumptionAnswers.get().map(\.body) == [
                ["customerConsented": "1", "sampleContentProvided": "0", "deliveryStatus": "DELIVERED"]
            ])
        let row = try #require(
            try await harness.pool.query(
                "SELECT (answer->>'policyOnly')::boolean AS alone, transaction_row_id FROM refund_requests"
            ).first)
        #expect(try row.decode("alone", as: Bool.self) == true)
        #expect(try row.decode("transaction_row_id", as: Int64?.self) == nil)
        #expect(try await harness.count("transactions") == 0, "a refund request creates no ledger row")
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "refund.requested" } }
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func aRequestPastItsDeadlineIsMissedCountedAndNeverSent() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver, delay: 0)
        defer { harness.stop() }
        try Self.appleKnows(fake, Self.gems())
        try await Self.pushRequest(harness, fake, Self.gems(), signedAgo: 13 * 3_600_000)  // Apple's 12 hours are over
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "missed" }
        #expect(fake.state.consumptionAnswers.get().isEmpty)
        // Counted by the process that closed it, just after its statement committed.
        let port = harness.service.port
        try await WebhookDelivery.waitUntil {
            try await RawHTTP.request(port: port, path: "/metrics").text
                .contains(#"receiptgate_refund_deadlines_missed_total{store="app_store"} 1"#)
        }
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// Whether a request's deadline has passed is the service's clock's to say: an answer that
    /// comes due once that clock is past the deadline is not sent, and the request is missed.
    @Test func anAnswerDueAfterTheDeadlineByTheServicesClockIsMissedAndNeverSent() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let clock = MovableClock()
        let harness = try await Self.start(fake, receiver: receiver, now: clock.now)
        defer { harness.stop() }
        try Self.appleKnows(fake, Self.gems())
        try await Self.pushRequest(harness, fake, Self.gems())  // signed now: Apple's 12 hours have just begun
        #expect(try await Self.request(harness)?.status == "pending")
        clock.move(by: 13 * 3600)
        try await Self.answerDueNow(harness)
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "missed" }
        #expect(fake.state.consumptionAnswers.get().isEmpty)
        let port = harness.service.port
        try await WebhookDelivery.waitUntil {
            try await RawHTTP.request(port: port, path: "/metrics").text
                .contains(#"receiptgate_refund_deadlines_missed_total{store="app_store"} 1"#)
        }
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// A process that recorded a request stops before the answer is due; two others on the same
    /// database carry on: the request is answered once.
    @Test func afterARestartTwoProcessesSendOneAnswer() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let first = try await Self.start(fake, receiver: receiver)
        try await Self.setPolicy(first, consent: true)
        let databaseURL = first.pool.connectionString
        try Self.appleKnows(fake, Self.gems())
        #expect(try await NotificationHistoryReconciliation.verify(first, Self.gems()).status == 200)
        try await Self.pushRequest(first, fake, Self.gems())
        await first.service.shutdown()
        let start = {
            try await VerifyHarness.start(
                environments: [.sandbox], outbox: VerifyHarness.fastOutbox(), pki: fake.pki,
                appStore: { pki in
                    var appStore = AppStoreConfiguration(trustRoots: [pki.root])
                    appStore.serverAPIKey = .init(
                        keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID,
                        privateKey: fake.teamKey)
                    appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
                    appStore.reconcileInterval = nil
                    return appStore
                },
                configure: {
                    $0.databaseURL = databaseURL; $0.quietSubscriptions.intervalSeconds = 0
                })
        }
        let second = try await start(), third = try await start()
        defer { second.stop(); third.stop() }
        try await Self.answerDueNow(second)
        try await WebhookDelivery.waitUntil {
            try await second.count("outbox WHERE target = 'refund_answer' AND status = 'delivered'") == 1
        }
        #expect(fake.state.consumptionAnswers.get().count == 1)
        #expect(try await Self.request(second)?.status == "answered")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// The admin API changes a client's refund policy by the same rules as the CLI, and lists requests.
    @Test func theAdminAPISetsThePolicyAndListsRequests() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver, delay: 0)
        defer { harness.stop() }
        let path = "/admin/clients/\(harness.client.clientID)/refund-policy"
        let auth = ["Authorization": "Bearer \(Self.adminToken)", "Content-Type": "application/json"]
        let refused = try await RawHTTP.request(
            port: harness.service.port, method: "PUT", path: path, headers: auth,
            body: Data(#"{"otherwise":"always"}"#.utf8))
        #expect(refused.status == 400 && refused.text.contains("refund-otherwise"), "\(refused.text)")
        let set = try await RawHTTP.request(
            port: harness.service.port, method: "PUT", path: path, headers: auth,
            body: Data(#"{"consumption_consent":true,"decline_at_percent":70,"otherwise":"neutral"}"#.utf8))
        #expect(set.status == 200, "\(set.text)")
        let policy = try await RawHTTP.request(port: harness.service.port, path: path, headers: auth).json()
        #expect(
            policy["consumption_consent"] as? Bool == true && policy["decline_at_percent"] as? Int == 70
                && policy["otherwise"] as? String == "neutral"
                && policy["sample_content"] as? Bool == false, "\(policy)")
        #expect(try await RawHTTP.request(port: harness.service.port, path: path).status == 401)

        try Self.appleKnows(fake, Self.gems())
        #expect(try await NotificationHistoryReconciliation.verify(harness, Self.gems()).status == 200)
        #expect(
            try await harness.client.post(
                "/v1/transactions/app_store/\(Self.id)/consumption", json: ["delivered": true, "consumed_percent": 75],
                version: "2"
            ).status == 200)
        try await Self.pushRequest(harness, fake, Self.gems())
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "answered" }
        #expect(
            fake.state.consumptionAnswers.get().first?.body["refundPreference"] == "DECLINE",
            "75 % is past the client's 70 %")
        let listed = try await RawHTTP.request(
            port: harness.service.port, path: "/admin/refund-requests", headers: auth
        ).json()
        let first = (listed["refund_requests"] as? [[String: Any]])?.first
        #expect(
            first?["status"] as? String == "answered"
                && (first?["answer"] as? [String: Any])?["preference"] as? String == "decline", "\(listed)")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// No report, but the game's delivery URL acknowledged the purchase: delivered. The player's
    /// earlier refunds are counted in the request.
    @Test func anAcknowledgedDeliveryCountsAsDeliveredAndEarlierRefundsAreCounted() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(fake, receiver: receiver, delay: 0, deliveryURL: receiver.url)
        defer { harness.stop() }
        try await Self.setPolicy(harness, consent: true)
        let earlier = Self.gems("2000000000008201"), now = Self.gems("2000000000008202")
        for transaction in [earlier, now] {
            try Self.appleKnows(fake, transaction)
            let verified = try await harness.client.post(
                "/v1/verify",
                json: [
                    "store": "app_store", "player_id": "p-42",
                    "receipt": try fake.pki.sign(AppleTestPKI.transaction(transaction)),
                ])
            #expect(verified.status == 200, "\(verified.text)")
        }
        var refunded = earlier
        refunded["revocationDate"] = Int64(Date().timeIntervalSince1970 * 1000)
        refunded["revocationReason"] = 0
        try await Self.pushRequest(harness, fake, refunded, type: "REFUND")
        try await WebhookDelivery.waitUntil {
            receiver.acknowledged.filter { $0.type == "entitlement.delivery" }.count == 2
        }
        try await Self.pushRequest(harness, fake, now)
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "answered" }
        let decided = try await harness.pool.query(
            "SELECT (answer->>'delivered')::boolean AS delivered, earlier_refunds FROM refund_requests"
        ).first
        #expect(try decided?.decode("delivered", as: Bool?.self) == true, "the acknowledged delivery counts")
        #expect(try decided?.decode("earlier_refunds", as: Int?.self) == 1)
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "refund.requested" } }
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func badConsumptionReportsAreClearFourHundreds() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        #expect(try await NotificationHistoryReconciliation.verify(harness, Self.gems()).status == 200)
        let path = "/v1/transactions/app_store/\(Self.id)/consumption"
        let cases: [(Data, Int, String)] = [
            (Data("{}".utf8), 400, "MISSING_FIELDS"),
            (Data(#"{"delivered":"yes"}"#.utf8), 400, "INVALID_FIELD"),
            (Data(#"{"delivered":true,"consumed_percent":101}"#.utf8), 400, "INVALID_FIELD"),
            (
                Data(
                    #"{"delivered":true,"usage_events":[{"description":"\#(String(repeating: "x", count: 501))"}]}"#
                        .utf8), 400, "INVALID_FIELD"
            ),
            (
                try JSONSerialization.data(withJSONObject: [
                    "delivered": true, "usage_events": Array(repeating: ["at_ms": 1], count: 1001),
                ]), 400, "INVALID_FIELD"
            ),
            (Data("not json".utf8), 400, "INVALID_FIELD"),
        ]
        for (body, status, code) in cases {
            let answer = try await harness.client.post(path, body: body, version: "2")
            #expect(
                answer.status == status && answer.text.contains(code),
                "\(String(decoding: body.prefix(80), as: UTF8.self)): \(answer.status) \(answer.text)")
        }
        let missing = try await harness.client.post(
            "/v1/transactions/app_store/2000000000000000/consumption", json: ["delivered": true], version: "2")
        #expect(missing.status == 404)
        await receiver.server.shutdown()
        await fake.shutdown()
    }
}

/// Google's pending refund reviews answered once with `orders.reviewrefund` (a local fake of the
/// Android Publisher API that checks the OAuth token and the body as Google documents it).
@Suite struct GoogleRefundReviews {
    @Test func aPendingReviewIsAnsweredOnceWithTheGamesReportAndItsVoidJoinsTheOutcome() async throws {
        let harness = try await GooglePlayHarness.start(settings: [Client.consumptionConsentSetting: ["on"]])
        defer { harness.stop() }
        let order = "GPA.3301-2345-6789-07777"
        try harness.google.addProduct(token: "tok-review", orderID: order)
        #expect(
            try await harness.client.post(
                "/v1/verify", json: ["store": "google_play", "receipt": "tok-review", "product_id": "gems100"]
            ).status == 200)
        let reported = try await harness.client.post(
            "/v1/transactions/google_play/\(order)/consumption", json: ["delivered": true, "consumed_percent": 45.2],
            version: "2")
        #expect(reported.status == 200, "\(reported.text)")
        harness.google.state.pendingRefundTokens.update { $0["refund-token-1"] = order }
        let review: [String: Any] = [
            "version": "1.0", "packageName": "com.example.game",
            "eventTimeMillis": "\(Int64(Date().timeIntervalSince1970 * 1000))",
            "pendingRefundReviewNotification": [
                "version": "1.0", "pendingRefundToken": "refund-token-1", "orderId": order,
                "refundReason": 7,
            ],
        ]
        #expect(try await harness.push(review, messageID: "review-1").status == 200)
        #expect(try await harness.push(review, messageID: "review-1").status == 200)  // Pub/Sub's redelivery
        try await harness.pool.execute(
            "UPDATE outbox SET next_attempt_at = now() WHERE target = 'refund_answer' AND status = 'pending'")
        try await WebhookDelivery.waitUntil { !harness.google.state.refundReviews.get().isEmpty }
        try await WebhookDelivery.waitUntil {
            try await harness.pool.query("SELECT status FROM refund_requests").first?.decode("status", as: String.self)
                == "answered"
        }
        let reviews = harness.google.state.refundReviews.get()
        #expect(reviews.count == 1)
        #expect(reviews.first?.orderID == order && reviews.first?.package == "com.example.game")
        #expect(
            reviews.first?.body == [
                "pendingRefundToken": "refund-token-1", "sampleContentProvided": "0", "refundPreference": "NEUTRAL",
                "consumptionPercentageMilliunits": "45200",
            ], "\(reviews)")
        let kept = try await harness.pool.query(
            "SELECT answer_token, sent_body::text AS sent, reason FROM refund_requests"
        ).first
        #expect(try kept?.decode("answer_token", as: String?.self) == nil, "the token is not kept once answered")
        #expect(try kept?.decode("sent", as: String?.self)?.contains("refund-token-1") == false)
        #expect(try kept?.decode("reason", as: String?.self) == "chargeback")
        let decoded = try await harness.pool.query(
            "SELECT decoded::text AS d FROM store_notifications WHERE notification_type = 'PENDING_REFUND_REVIEW'")
        #expect(
            try decoded.first?.decode("d", as: String.self).contains("refund-token-1") == false,
            "operators see no token")
        #expect(harness.receiver.bodies("/hooks").contains { $0["type"] as? String == "refund.requested" })

        // Two weeks past the deadline without a void, Google's silence is taken as no refund...
        let requests = RefundRequestRepository(pool: harness.pool)
        try await harness.pool.execute("UPDATE refund_requests SET deadline = now() - interval '15 days'")
        #expect(try await requests.closeUndecided() == 1)
        #expect(
            try await harness.pool.query("SELECT outcome FROM refund_requests").first?.decode(
                "outcome", as: String?.self) == "not_refunded")
        // ...until Google voids the order after all: the outcome is joined.
        try harness.google.addVoided(token: "tok-review", orderID: order)
        let void: [String: Any] = [
            "version": "1.0", "packageName": "com.example.game",
            "eventTimeMillis": "\(Int64(Date().timeIntervalSince1970 * 1000))",
            "voidedPurchaseNotification": [
                "purchaseToken": "tok-review", "orderId": order, "productType": 2, "refundType": 1,
            ],
        ]
        #expect(try await harness.push(void, messageID: "void-1").status == 200)
        try await WebhookDelivery.waitUntil {
            try await harness.pool.query("SELECT outcome FROM refund_requests").first?.decode(
                "outcome", as: String?.self) == "refunded"
        }
    }
}
