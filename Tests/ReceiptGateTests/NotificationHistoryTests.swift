import AppStore
import AppStoreTestSupport
import Foundation
import TestSupport
import Testing

@testable import ReceiptGate

/// Notifications whose push never arrived, read back from Apple's notification history (a local
/// fake of Get Notification History, paged as Apple pages it), reach the ledger and the game
/// server exactly as a push would have, and once however often they are seen.
@Suite struct NotificationHistoryReconciliation {
    static let adminToken = "history-admin-" + String(repeating: "t", count: 32)

    static func start(
        _ fake: FakeAppStoreServerAPI, receiver: WebhookReceiver, databaseURL: String? = nil
    ) async throws -> VerifyHarness {
        try await VerifyHarness.start(
            environments: [.sandbox], outbox: VerifyHarness.fastOutbox(), adminToken: adminToken,
            webhookURL: receiver.url, pki: fake.pki,
            appStore: { pki in
                var appStore = AppStoreConfiguration(trustRoots: [pki.root])
                appStore.serverAPIKey = .init(
                    keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID,
                    privateKey: fake.teamKey)
                appStore.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
                appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
                appStore.reconcileInterval = .milliseconds(300)
                return appStore
            },
            configure: { configuration in
                if let databaseURL { configuration.databaseURL = databaseURL }
            })
    }

    /// A signed App Store Server Notification V2, as Apple pushes it and lists it in the history.
    static func signed(
        _ pki: AppleTestPKI, type: String, transaction: [String: any Sendable], uuid: String, signedDate: Int64
    ) throws -> String {
        let data: [String: any Sendable] = [
            "environment": "Sandbox", "bundleId": "com.example.game",
            "signedTransactionInfo": try pki.sign(AppleTestPKI.transaction(transaction)),
        ]
        return try pki.sign([
            "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": signedDate,
            "data": data,
        ])
    }

    /// Puts a signed notification of `type` into the sandbox history, as sent at `signedDate`.
    static func addToHistory(
        _ fake: FakeAppStoreServerAPI, type: String, transaction: [String: any Sendable], signedDate: Int64,
        uuid: String = UUID().uuidString.lowercased()
    ) throws {
        fake.addToHistory(
            try signed(fake.pki, type: type, transaction: transaction, uuid: uuid, signedDate: signedDate),
            signedDate: signedDate, environment: "Sandbox")
    }

    /// The first period of a monthly subscription, ending a minute after `now`, and its renewal.
    static func subscription(
        _ original: String, renewal: String, now: Int64
    ) -> (first: [String: any Sendable], renewed: [String: any Sendable]) {
        let first: [String: any Sendable] = [
            "transactionId": original, "originalTransactionId": original, "environment": "Sandbox",
            "type": "Auto-Renewable Subscription", "productId": "vip.monthly", "expiresDate": now + 60_000,
        ]
        var renewed = first
        renewed["transactionId"] = renewal
        renewed["expiresDate"] = now + 30 * 86_400_000
        return (first, renewed)
    }

    static func verify(_ harness: VerifyHarness, _ transaction: [String: any Sendable]) async throws -> RawHTTP.Response
    {
        try await harness.client.post(
            "/v1/verify",
            json: ["store": "app_store", "receipt": try harness.pki.sign(AppleTestPKI.transaction(transaction))])
    }

    static func state(_ harness: VerifyHarness, _ id: String) async throws -> String? {
        try await NotificationsDriveTheLedger.transaction(harness, id)["state"] as? String
    }

    /// Sandbox history requests that started a run (no page token).
    static func runs(_ fake: FakeAppStoreServerAPI) -> Int {
        fake.state.historyQueries.get().filter { $0.environment == "Sandbox" && $0.paginationToken == nil }.count
    }

    @Test func aRefundAndItsReversalOnlyInTheHistoryAreAppliedOnceWithTheirWebhooks() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let id = "2000000000007001"
        let transaction: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": id, "environment": "Sandbox",
        ]
        #expect(try await Self.verify(harness, transaction).status == 200)

        // Refunded a minute ago; the push never came. Five records, so the history has three pages.
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let refundUUID = UUID().uuidString.lowercased()
        var refunded = transaction
        refunded["revocationDate"] = now - 60_000
        refunded["revocationReason"] = 0
        for other in 0..<4 {  // other purchases' news, which the ledger does not hold
            let otherID = "200000000000710\(other)"
            try Self.addToHistory(fake, type: "TEST", transaction: ["transactionId": otherID], signedDate: now - 90_000)
        }
        let refund = try Self.signed(
            fake.pki, type: "REFUND", transaction: refunded, uuid: refundUUID, signedDate: now - 60_000)
        fake.addToHistory(refund, signedDate: now - 60_000, environment: "Sandbox")
        try await WebhookDelivery.waitUntil { try await Self.state(harness, id) == "refunded" }
        #expect(fake.state.historyQueries.get().contains { $0.paginationToken == "page-4" }, "the last page was read")

        // Its reversal, also only in the history: the next run reads it (and the refund again).
        let reversal = try Self.signed(
            fake.pki, type: "REFUND_REVERSED", transaction: transaction, uuid: UUID().uuidString.lowercased(),
            signedDate: now - 30_000)
        fake.addToHistory(reversal, signedDate: now - 30_000, environment: "Sandbox")
        try await WebhookDelivery.waitUntil { try await Self.state(harness, id) == "active" }

        // The refund pushed late as well: a duplicate, applied once.
        let pushed = try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/v1/notifications/app-store",
            body: Data(#"{"signedPayload":"\#(refund)"}"#.utf8))
        #expect(pushed.status == 200)
        #expect(try pushed.json()["duplicate"] as? Bool == true)
        // Two more runs, each reading both again.
        let runs = Self.runs(fake)
        try await WebhookDelivery.waitUntil { Self.runs(fake) >= runs + 2 }
        #expect(try await Self.state(harness, id) == "active")
        try await WebhookDelivery.waitUntil { receiver.acknowledged.filter { $0.transactionID == id }.count >= 3 }
        let types = receiver.acknowledged.filter { $0.transactionID == id }.map(\.type)
        #expect(
            types.sorted() == ["transaction.refund_reversed", "transaction.refunded", "transaction.verified"],
            "\(types)")
        #expect(receiver.acknowledged.allSatisfy { $0.signatureValid })
        // Every window starts before the previous one ended, within Apple's sandbox retention.
        let windows = fake.state.historyQueries.get().filter {
            $0.environment == "Sandbox" && $0.paginationToken == nil
        }
        for (earlier, later) in zip(windows, windows.dropFirst()) {
            #expect(later.startDate < earlier.endDate && later.startDate >= earlier.endDate - 10 * 60_000)
        }
        #expect(windows.allSatisfy { $0.startDate >= now - 30 * 24 * 3_600_000 })
        #expect(try await harness.count("store_notifications") == 6, "each notification recorded once")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func aRefusedKeyNamesTheSettingsAndTheNextRunResumes() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        fake.state.failuresFirst.set(["/inApps/v1/notifications/history": [401]])
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        let id = "2000000000007201"
        let transaction: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": id, "environment": "Sandbox",
        ]
        #expect(try await Self.verify(harness, transaction).status == 200)
        var refunded = transaction
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        refunded["revocationDate"] = now - 5_000
        try Self.addToHistory(fake, type: "REFUND", transaction: refunded, signedDate: now - 5_000)
        try await WebhookDelivery.waitUntil {
            harness.log.captured.contains { $0.contains("RECEIPTGATE_APPSTORE_API_KEY_ID") }
        }
        try await WebhookDelivery.waitUntil { try await Self.state(harness, id) == "refunded" }
        // Recorded when the run ends, just after it recorded the refund.
        func runs() async throws -> [String?] {
            try await harness.pool.query(
                "SELECT error FROM store_poll_runs WHERE poll = 'app_store.notification_history' ORDER BY id"
            )
            .map { try $0.decode("error", as: String?.self) }
        }
        // The run Apple refused is recorded with its reason, and a later one succeeds. Other runs
        // may come before it: one before the client was registered (nothing to ask), or one that
        // timed out on a loaded machine.
        func resumedAfterTheRefusal(_ runs: [String?]) -> Bool {
            guard let refused = runs.firstIndex(where: { $0?.contains("RECEIPTGATE_APPSTORE_API_KEY_ID") == true })
            else { return false }
            return runs[(refused + 1)...].contains { $0 == nil }
        }
        try await WebhookDelivery.waitUntil { resumedAfterTheRefusal(try await runs()) }
        let recorded = try await runs()
        #expect(
            resumedAfterTheRefusal(recorded),
            "the refused run is recorded with its reason, then the next succeeds: \(recorded)")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// Two processes on one database read the history in turn, never the same window twice:
    /// every run starts where the previous one (of either process) ended, less the overlap.
    @Test func twoProcessesNeverReadTheSameWindow() async throws {
        let fake = try FakeAppStoreServerAPI()
        fake.state.history.set([:])  // an empty history, served as Apple serves one
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let first = try await Self.start(fake, receiver: receiver)
        defer { first.stop() }
        let second = try await Self.start(fake, receiver: receiver, databaseURL: first.pool.connectionString)
        defer { second.stop() }
        try await WebhookDelivery.waitUntil { Self.runs(fake) >= 8 }
        let windows = fake.state.historyQueries.get().filter {
            $0.environment == "Sandbox" && $0.paginationToken == nil
        }
        #expect(Set(windows.map(\.startDate)).count == windows.count, "a window was read twice")
        for (earlier, later) in zip(windows, windows.dropFirst()) {
            #expect(later.startDate == earlier.endDate - 10 * 60_000, "each run follows the one before")
        }
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// A renewal whose push was lost: the subscription would look expired; the history renews it,
    /// with one `subscription.renewed` webhook.
    @Test func aRenewalOnlyInTheHistoryExtendsTheSubscriptionOnce() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let original = "2000000000007301"
        let (first, renewed) = Self.subscription(original, renewal: "2000000000007302", now: now)
        #expect(try await Self.verify(harness, first).status == 200)
        try Self.addToHistory(fake, type: "DID_RENEW", transaction: renewed, signedDate: now - 1_000)
        func expires() async throws -> Int? {
            try await harness.client.get("/v1/subscriptions/app_store/\(original)").json()["expires_date_ms"] as? Int
        }
        try await WebhookDelivery.waitUntil { try await expires() == Int(now + 30 * 86_400_000) }
        let runs = Self.runs(fake)
        try await WebhookDelivery.waitUntil { Self.runs(fake) >= runs + 2 }  // read twice more
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "subscription.renewed" } }
        #expect(receiver.acknowledged.filter { $0.type == "subscription.renewed" }.count == 1)
        #expect(try await harness.count("transactions") == 2)

        // An operator sees the runs: counted on /metrics, listed on the console with what they caught.
        let metrics = try await RawHTTP.request(port: harness.service.port, path: "/metrics").text
        #expect(
            metrics.contains(
                #"receiptgate_store_poll_notifications_total{poll="app_store.notification_history",result="new"} 1"#),
            "\(metrics)")
        #expect(
            metrics.contains(
                #"receiptgate_store_poll_runs_total{poll="app_store.notification_history",outcome="succeeded"}"#))
        let errors = try await harness.pool.query("SELECT error FROM store_poll_runs WHERE error IS NOT NULL").map {
            try $0.decode("error", as: String.self)
        }
        #expect(
            metrics.contains(
                #"receiptgate_store_poll_runs_total{poll="app_store.notification_history",outcome="failed"} \#(errors.count)"#
            ),
            "failed runs: \(errors)")
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.adminToken)
        let overview = try await browser.get("/console").text
        #expect(overview.contains(#"<table id="store-poll-runs">"#))
        #expect(overview.contains(#"<td class="poll">app_store.notification_history</td>"#))
        #expect(overview.contains(#"<td class="new">1</td>"#), "the run that caught the renewal")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// An expiry told late (read back from the history after a renewal was pushed) is of the
    /// earlier period: the subscription stays active and no `subscription.expired` is sent.
    @Test func aLateExpiryOfAnEarlierPeriodLeavesTheRenewedSubscriptionActive() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let original = "2000000000007401"
        let (first, renewed) = Self.subscription(original, renewal: "2000000000007402", now: now)
        #expect(try await Self.verify(harness, first).status == 200)
        let push = try Self.signed(
            fake.pki, type: "DID_RENEW", transaction: renewed, uuid: UUID().uuidString.lowercased(), signedDate: now)
        #expect(
            try await RawHTTP.request(
                port: harness.client.port, method: "POST", path: "/v1/notifications/app-store",
                body: Data(#"{"signedPayload":"\#(push)"}"#.utf8)
            ).status == 200)
        try Self.addToHistory(fake, type: "EXPIRED", transaction: first, signedDate: now - 5_000)
        try await WebhookDelivery.waitUntil { try await harness.count("store_notifications") == 2 }
        let subscription = try await harness.client.get("/v1/subscriptions/app_store/\(original)").json()
        #expect(subscription["status"] as? String == "active")
        #expect(subscription["expires_date_ms"] as? Int == Int(now + 30 * 86_400_000))
        let runs = Self.runs(fake)
        try await WebhookDelivery.waitUntil { Self.runs(fake) >= runs + 1 }
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "subscription.renewed" } }
        #expect(!receiver.acknowledged.contains { $0.type == "subscription.expired" })
        // The stored row keeps Apple's signed envelope, as a pushed one does.
        let id = try await harness.pool.query("SELECT id FROM store_notifications WHERE notification_type = 'EXPIRED'")
            .first?.decode("id", as: Int64.self)
        let raw = try await harness.service.repositories.notifications.rawBody(id: try #require(id))
        #expect(raw.map { String(decoding: $0, as: UTF8.self) }?.hasPrefix(#"{"signedPayload":"ey"#) == true)
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// A renewal-status change of an earlier period, told late, is not the subscription's now:
    /// auto-renewal stays as the current period's news left it.
    @Test func aLateRenewalStatusChangeOfAnEarlierPeriodLeavesAutoRenewal() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let original = "2000000000007501"
        let (first, renewed) = Self.subscription(original, renewal: "2000000000007502", now: now)
        #expect(try await Self.verify(harness, first).status == 200)
        func push(_ type: String, _ transaction: [String: any Sendable], autoRenew: Int) async throws {
            let data: [String: any Sendable] = [
                "environment": "Sandbox", "bundleId": "com.example.game",
                "signedTransactionInfo": try fake.pki.sign(AppleTestPKI.transaction(transaction)),
                "signedRenewalInfo": try fake.pki.sign([
                    "originalTransactionId": original, "productId": "vip.monthly", "autoRenewStatus": autoRenew,
                    "environment": "Sandbox", "signedDate": now,
                ]),
            ]
            let signed = try fake.pki.sign([
                "notificationType": type, "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
                "signedDate": now, "data": data,
            ])
            let answer = try await RawHTTP.request(
                port: harness.client.port, method: "POST", path: "/v1/notifications/app-store",
                body: Data(#"{"signedPayload":"\#(signed)"}"#.utf8))
            #expect(answer.status == 200, "\(answer.text)")
        }
        func autoRenew() async throws -> Bool? {
            try await harness.client.get("/v1/subscriptions/app_store/\(original)").json()["auto_renew"] as? Bool
        }
        try await push("DID_RENEW", renewed, autoRenew: 1)
        #expect(try await autoRenew() == true)
        try await push("DID_CHANGE_RENEWAL_STATUS", first, autoRenew: 0)  // of the first period, told after the renewal
        #expect(try await autoRenew() == true)
        try await push("DID_CHANGE_RENEWAL_STATUS", renewed, autoRenew: 0)  // of the current one
        #expect(try await autoRenew() == false)
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// The store first, the game second: a subscription the history told of before any game
    /// verified it is known, not claimed; the game's first verify is its first verification (not
    /// a duplicate) with its `transaction.verified`, as when the push comes first, and each
    /// webhook goes out once however often the history is read.
    @Test func aPurchaseFoundInTheHistoryBeforeTheGamesVerifyIsStillTheGamesFirstVerification() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let (_, renewed) = Self.subscription("2000000000007501", renewal: "2000000000007502", now: now)
        try Self.addToHistory(fake, type: "SUBSCRIBED", transaction: renewed, signedDate: now - 1_000)
        try await WebhookDelivery.waitUntil { try await harness.count("transactions") == 1 }
        let verified = try await Self.verify(harness, renewed)
        #expect(verified.status == 200)
        #expect(try verified.json()["duplicate"] as? Bool == false, "the first claim is a first verification")
        #expect(try await Self.verify(harness, renewed).json()["duplicate"] as? Bool == true)
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "transaction.verified" } }
        let runs = Self.runs(fake)
        try await WebhookDelivery.waitUntil { Self.runs(fake) >= runs + 1 }  // the history read again after the claim
        let types = receiver.acknowledged.filter { $0.transactionID == "2000000000007502" }.map(\.type)
        #expect(types.sorted() == ["subscription.renewed", "transaction.verified"], "\(types)")
        await receiver.server.shutdown()
        await fake.shutdown()
    }
}
