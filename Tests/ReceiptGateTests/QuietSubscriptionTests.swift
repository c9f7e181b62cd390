import AmazonAppstore
import AppStore
import AppStoreTestSupport
import Foundation
import GooglePlay
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// Subscriptions whose period ended with no news (the renewal's, expiry's or refund's push lost)
/// are read back from Apple's Get All Subscription Statuses (a local fake speaking its wire
/// format, answering Apple-signed data) and reach the ledger and the game server as a push would.
@Suite struct QuietSubscriptionReadBack {
    static let original = "2000000000009001"
    /// How long the test periods still run when verified: within `QuietSubscriptionSettings.early`.
    static let running: Int64 = 30 * 60_000

    /// The service with the App Store Server API on the fake; the schedule of quiet reads as given
    /// (0: off, so only by-hand runs read), the history off unless asked for.
    static func start(
        _ fake: FakeAppStoreServerAPI, receiver: WebhookReceiver, quiet: QuietSubscriptionSettings = .byHandOnly,
        history: Duration? = nil
    ) async throws -> VerifyHarness {
        let harness = try await VerifyHarness.start(
            environments: [.sandbox], outbox: VerifyHarness.fastOutbox(), webhookURL: receiver.url,
            pki: fake.pki,
            appStore: { pki in
                var appStore = AppStoreConfiguration(trustRoots: [pki.root])
                appStore.serverAPIKey = .init(
                    keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID,
                    privateKey: fake.teamKey)
                appStore.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
                appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
                appStore.reconcileInterval = history
                return appStore
            }, configure: { $0.quietSubscriptions = quiet })
        receiver.secret.set(harness.client.secret)
        return harness
    }

    /// A monthly subscription's period, Apple-shaped.
    static func period(
        _ transactionID: String, original: String = original, expires: Int64, extra: [String: any Sendable] = [:]
    ) -> [String: any Sendable] {
        var period: [String: any Sendable] = [
            "transactionId": transactionID, "originalTransactionId": original, "environment": "Sandbox",
            "type": "Auto-Renewable Subscription", "productId": "vip.monthly", "expiresDate": expires,
        ]
        for (key, value) in extra { period[key] = value }
        return period
    }

    /// The game verifies periods still running (the settings here count them quiet already).
    static func verifyPeriods(_ harness: VerifyHarness, _ transactions: [[String: any Sendable]]) async throws {
        for transaction in transactions {
            let response = try await NotificationHistoryReconciliation.verify(harness, transaction)
            #expect(response.status == 200 && response.text.contains(#""state":"active""#), "\(response.text)")
        }
    }

    static func status(_ harness: VerifyHarness, _ original: String = original) async throws -> [String: Any] {
        try await harness.client.get("/v1/subscriptions/app_store/\(original)").json()
    }

    static func reconcile(_ harness: VerifyHarness) async throws -> PollRepository.Run {
        let report = try await harness.service.reconcile(store: .appStore, since: nil)
        return try #require(report.runs.first { $0.poll == "app_store.quiet_subscriptions" })
    }

    @Test func aRenewalWhosePushWasLostIsFoundByTheScheduleAndToldOnce() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        var quiet = QuietSubscriptionSettings()
        quiet.intervalSeconds = 1
        quiet.afterSeconds = QuietSubscriptionSettings.early
        let harness = try await Self.start(fake, receiver: receiver, quiet: quiet)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Apple renewed it (and its push was lost) by the time the schedule asks; the schedule may
        // ask the moment the game's verify has recorded it.
        let renewedUntil = now + 30 * 86_400_000
        let renewed = try fake.pki.sign(
            AppleTestPKI.transaction(Self.period("2000000000009002", expires: renewedUntil)))
        let renewal = try fake.pki.sign([
            "originalTransactionId": Self.original, "productId": "vip.monthly", "autoRenewStatus": 1,
            "environment": "Sandbox", "signedDate": now,
        ])
        fake.setSubscriptionStatus(Self.original, status: 1, signedTransaction: renewed, signedRenewal: renewal)
        try await Self.verifyPeriods(harness, [Self.period(Self.original, expires: now + Self.running)])

        try await WebhookDelivery.waitUntil {
            try await Self.status(harness)["expires_date_ms"] as? Int == Int(renewedUntil)
        }
        try await WebhookDelivery.waitUntil { receiver.acknowledged.contains { $0.type == "subscription.renewed" } }
        #expect(try await Self.status(harness)["status"] as? String == "active")
        // Renewed, it is no longer quiet: later runs do not ask Apple about it again.
        let reads = fake.statusReads()
        let runs = try await harness.count("store_poll_runs")
        try await WebhookDelivery.waitUntil { try await harness.count("store_poll_runs") >= runs + 2 }
        #expect(fake.statusReads() == reads)
        #expect(receiver.acknowledged.filter { $0.type == "subscription.renewed" }.count == 1)
        let recorded = try await harness.pool.query(
            """
            SELECT reread, changed FROM store_poll_runs WHERE poll = 'app_store.quiet_subscriptions' AND reread > 0
            """
        ).map { (try $0.decode("reread", as: Int.self), try $0.decode("changed", as: Int.self)) }
        #expect(recorded.count == 1 && recorded.first?.0 == 1 && recorded.first?.1 == 1, "\(recorded)")
        let metrics = try await RawHTTP.request(port: harness.service.port, path: "/metrics").text
        #expect(
            metrics.contains(
                #"receiptgate_store_poll_subscriptions_reread_total{poll="app_store.quiet_subscriptions"} 1"#),
            "\(metrics)")
        #expect(metrics.contains(#"receiptgate_store_poll_changes_total{poll="app_store.quiet_subscriptions"} 1"#))
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func anExpiryABillingIssueAndARefundAreEachAppliedOnce() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let (expiring, retrying, refunded) = ("2000000000009101", "2000000000009201", "2000000000009301")
        try await Self.verifyPeriods(
            harness, [expiring, retrying, refunded].map { Self.period($0, original: $0, expires: now + Self.running) })
        let graceEnd = now + 6 * 86_400_000
        fake.setSubscriptionStatus(
            expiring, status: 2,
            signedTransaction: try fake.pki.sign(
                AppleTestPKI.transaction(
                    Self.period(expiring, original: expiring, expires: now + Self.running))))
        fake.setSubscriptionStatus(
            retrying, status: 4,
            signedTransaction: try fake.pki.sign(
                AppleTestPKI.transaction(
                    Self.period(retrying, original: retrying, expires: now + Self.running))),
            signedRenewal: try fake.pki.sign([
                "originalTransactionId": retrying, "productId": "vip.monthly", "autoRenewStatus": 1,
                "gracePeriodExpiresDate": graceEnd, "environment": "Sandbox", "signedDate": now,
            ]))
        fake.setSubscriptionStatus(
            refunded, status: 5,
            signedTransaction: try fake.pki.sign(
                AppleTestPKI.transaction(
                    Self.period(
                        refunded, original: refunded, expires: now + Self.running,
                        extra: ["revocationDate": now, "revocationReason": 0]))))

        let run = try await Self.reconcile(harness)
        #expect(run.error == nil && run.byHand)
        #expect(run.tally.reread == 3 && run.tally.changed == 3 && run.tally.new == 3, "\(run.tally)")
        let expired = try await Self.status(harness, expiring)
        #expect(expired["status"] as? String == "expired", "\(expired)")
        #expect(try await Self.status(harness, retrying)["status"] as? String == "grace_period")
        #expect(try await Self.status(harness, refunded)["status"] as? String == "refunded")
        try await WebhookDelivery.waitUntil { receiver.acknowledged.count >= 6 }
        let told = receiver.acknowledged.filter { $0.type != "transaction.verified" }.map {
            "\($0.type) \($0.transactionID ?? "")"
        }.sorted()
        #expect(
            told == [
                "subscription.billing_issue \(retrying)", "subscription.expired \(expiring)",
                "transaction.refunded \(refunded)",
            ], "\(told)")

        // The one in grace stays quiet until its grace ends; read back a day later at the
        // earliest. A second run asks nothing, changes nothing, and tells nothing.
        let again = try await Self.reconcile(harness)
        #expect(again.tally == PollTally(), "\(again.tally)")
        #expect(receiver.acknowledged.count == 6)
        #expect(fake.statusReads() == 3)
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func eachRunAsksAtMostItsBudgetOldestFirst() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        var quiet = QuietSubscriptionSettings.byHandOnly
        quiet.budget = 2
        let harness = try await Self.start(fake, receiver: receiver, quiet: quiet)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let ids = ["2000000000009401", "2000000000009402", "2000000000009403"]
        let ends = ids.indices.map { now + Self.running + Int64($0) * 1_000 }  // the first ends first
        try await Self.verifyPeriods(
            harness, ids.indices.map { Self.period(ids[$0], original: ids[$0], expires: ends[$0]) })
        for (index, id) in ids.enumerated() {
            fake.setSubscriptionStatus(
                id, status: 2,
                signedTransaction: try fake.pki.sign(
                    AppleTestPKI.transaction(
                        Self.period(id, original: id, expires: ends[index]))))
        }
        let first = try await Self.reconcile(harness)
        #expect(first.tally.reread == 2 && first.tally.changed == 2)
        #expect(try await Self.status(harness, ids[0])["status"] as? String == "expired")
        #expect(try await Self.status(harness, ids[1])["status"] as? String == "expired")
        #expect(
            try await Self.status(harness, ids[2])["status"] as? String == "active", "the newest waits for the next run"
        )
        let second = try await Self.reconcile(harness)
        #expect(second.tally.reread == 1 && second.tally.changed == 1)
        #expect(try await Self.status(harness, ids[2])["status"] as? String == "expired")
        #expect(fake.statusReads() == 3)
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func aRateLimitOrARefusedKeyStopsTheRunAndTheSubscriptionIsAskedAgain() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await Self.verifyPeriods(harness, [Self.period(Self.original, expires: now + Self.running)])
        fake.setSubscriptionStatus(
            Self.original, status: 2,
            signedTransaction: try fake.pki.sign(
                AppleTestPKI.transaction(
                    Self.period(Self.original, expires: now + Self.running))))
        // Rate limited past the client's retries, then the key refused.
        fake.state.failuresFirst.set(["/inApps/v1/subscriptions/{id}": Array(repeating: 429, count: 3)])
        let limited = try await Self.reconcile(harness)
        fake.state.failuresFirst.set(["/inApps/v1/subscriptions/{id}": [401]])
        #expect(limited.error?.contains("rate limited by Apple") == true, "\(limited.error ?? "")")
        let refused = try await Self.reconcile(harness)
        #expect(refused.error?.contains("RECEIPTGATE_APPSTORE_API_KEY_ID") == true, "\(refused.error ?? "")")
        #expect(try await Self.status(harness)["status"] as? String == "active")
        let recovered = try await Self.reconcile(harness)
        #expect(recovered.error == nil && recovered.tally.changed == 1)
        #expect(try await Self.status(harness)["status"] as? String == "expired")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// A grace period that recovered (a renewal after it) leaves the subscription out of the quiet
    /// ones: the earlier period's grace end is not the renewed one's.
    @Test func aRecoveredGracePeriodIsNotAskedAboutAgain() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await Self.verifyPeriods(harness, [Self.period(Self.original, expires: now + Self.running)])
        fake.setSubscriptionStatus(
            Self.original, status: 4,
            signedTransaction: try fake.pki.sign(
                AppleTestPKI.transaction(
                    Self.period(Self.original, expires: now + Self.running))),
            signedRenewal: try fake.pki.sign([
                "originalTransactionId": Self.original, "productId": "vip.monthly", "autoRenewStatus": 1,
                "gracePeriodExpiresDate": now + Self.running + 60_000, "environment": "Sandbox", "signedDate": now,
            ]))
        #expect(try await Self.reconcile(harness).tally.changed == 1)
        #expect(try await Self.status(harness)["status"] as? String == "grace_period")
        // Recovered: Apple charged, a new period of a month.
        fake.setSubscriptionStatus(
            Self.original, status: 1,
            signedTransaction: try fake.pki.sign(
                AppleTestPKI.transaction(
                    Self.period("2000000000009012", expires: now + 30 * 86_400_000))))
        try await harness.pool.execute("UPDATE subscriptions SET reread_at = NULL")  // a day later
        #expect(try await Self.reconcile(harness).tally.changed == 1)
        let renewed = try await Self.status(harness)
        #expect(
            renewed["status"] as? String == "active" && renewed["grace_period_expires_date_ms"] is NSNull, "\(renewed)")
        try await harness.pool.execute("UPDATE subscriptions SET reread_at = NULL")
        #expect(try await Self.reconcile(harness).tally.reread == 0, "renewed, it is not quiet")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// A disabled client's subscriptions take none of the budget; one client whose app Apple
    /// refuses the key for is skipped, and the other clients' subscriptions are still read.
    @Test func oneClientsTroubleDoesNotStarveTheOthers() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        var quiet = QuietSubscriptionSettings.byHandOnly
        quiet.budget = 2
        let harness = try await Self.start(fake, receiver: receiver, quiet: quiet)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        func client(_ name: String, bundle: String) async throws -> SignedClient {
            var settings = VerifyHarness.settings(name: name, environments: [.sandbox], gameID: nil)
            settings.appIdentifiers[AppStoreProvider.bundleIDKind.name] = [bundle]
            let created = try await harness.service.clients.create(settings)
            return SignedClient(port: harness.service.port, clientID: created.client.clientID, secret: created.secret)
        }
        // Oldest first: the disabled client's, then the one Apple refuses (the fake's key is for another bundle), then the healthy one.
        let gone = try await client("Gone", bundle: "com.example.gone"),
            refused = try await client("Refused", bundle: "com.example.refused")
        for (signer, id, bundle, end) in [
            (gone, "2000000000009601", "com.example.gone", Int64(0)),
            (refused, "2000000000009602", "com.example.refused", 1_000),
            (harness.client, "2000000000009603", "com.example.game", 2_000),
        ] {
            var transaction = Self.period(id, original: id, expires: now + Self.running + end)
            transaction["bundleId"] = bundle
            let verified = try await signer.post(
                "/v1/verify",
                json: ["store": "app_store", "receipt": try fake.pki.sign(AppleTestPKI.transaction(transaction))])
            #expect(verified.status == 200, "\(verified.text)")
        }
        _ = try await harness.service.clients.disable(gone.clientID)
        fake.setSubscriptionStatus(
            "2000000000009603", status: 2,
            signedTransaction: try fake.pki.sign(
                AppleTestPKI.transaction(
                    Self.period("2000000000009603", original: "2000000000009603", expires: now + Self.running + 2_000)))
        )
        let run = try await Self.reconcile(harness)
        #expect(
            run.error?.contains("com.example.refused") == false && run.error?.contains(refused.clientID) == true,
            "\(run.error ?? "")")
        #expect(run.tally.reread == 2 && run.tally.changed == 1, "\(run.tally)")
        #expect(try await Self.status(harness, "2000000000009603")["status"] as? String == "expired")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    /// Apple's `Retry-After` holds the schedule: the next run comes no sooner than Apple asked,
    /// though the interval is a second.
    @Test func aRateLimitWithRetryAfterHoldsTheScheduledRuns() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        var quiet = QuietSubscriptionSettings()
        quiet.intervalSeconds = 1
        quiet.afterSeconds = QuietSubscriptionSettings.early
        fake.state.retryAfterSeconds.set(600)
        fake.state.failuresFirst.set(["/inApps/v1/subscriptions/{id}": [429]])
        let harness = try await Self.start(fake, receiver: receiver, quiet: quiet)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await Self.verifyPeriods(harness, [Self.period(Self.original, expires: now + Self.running)])
        try await WebhookDelivery.waitUntil {
            try await harness.pool.query(
                "SELECT 1 FROM store_poll_runs WHERE poll = 'app_store.quiet_subscriptions' AND error IS NOT NULL"
            ).count == 1
        }
        let held = try await harness.pool.query(
            """
            SELECT extract(epoch FROM lease_until - now())::float8 AS seconds FROM store_polls WHERE name = 'app_store.quiet_subscriptions'
            """
        ).first?.decode("seconds", as: Double.self)
        #expect((held ?? 0) > 500, "the next run waits for Apple's Retry-After: \(held ?? 0) s")
        #expect(fake.statusReads() == 1, "asked once, not again a second later")
        await receiver.server.shutdown()
        await fake.shutdown()
    }

    @Test func aStatusNotSignedByAppleChangesNothing() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await Self.verifyPeriods(harness, [Self.period(Self.original, expires: now + Self.running)])
        let forger = try AppleTestPKI()
        fake.setSubscriptionStatus(
            Self.original, status: 5,
            signedTransaction: try forger.sign(
                AppleTestPKI.transaction(
                    Self.period(
                        Self.original, expires: now + Self.running,
                        extra: ["revocationDate": now, "revocationReason": 0]))))
        let run = try await Self.reconcile(harness)
        #expect(
            run.error == nil && run.tally.reread == 1 && run.tally.found == 0 && run.tally.changed == 0, "\(run.tally)")
        #expect(try await Self.status(harness)["status"] as? String == "active")
        #expect(try await harness.count("store_notifications") == 0)
        await receiver.server.shutdown()
        await fake.shutdown()
    }
}

extension QuietSubscriptionSettings {
    /// Asking an hour before a period ends, so a test's freshly verified periods (ending within
    /// the hour) count as quiet at once: no test waits for a clock.
    static let early = -3600

    /// No schedule (by-hand runs only), asking early.
    static var byHandOnly: Self {
        var settings = Self()
        settings.intervalSeconds = 0
        settings.afterSeconds = early
        return settings
    }
}

/// Google Play subscriptions that went quiet, read back with `subscriptionsv2.get` on the token
/// they were verified with (a local fake of the Android Publisher API).
@Suite struct QuietGooglePlaySubscriptions {
    static func reconcile(_ harness: GooglePlayHarness) async throws -> PollRepository.Run {
        let report = try await harness.service.reconcile(store: .googlePlay, since: nil)
        return try #require(report.runs.first { $0.poll == "google_play.quiet_subscriptions" })
    }

    static func status(_ harness: GooglePlayHarness, _ original: String) async throws -> String? {
        try await harness.client.get("/v1/subscriptions/google_play/\(original)").json()["status"] as? String
    }

    @Test func aLostRenewalAndALostExpiryAreReadBackAndToldOnce() async throws {
        let harness = try await GooglePlayHarness.start(quiet: .byHandOnly)
        defer { harness.stop() }
        let end = Date().addingTimeInterval(1800)
        try harness.google.addSubscription(token: "sub-renews", latestOrderID: "GPA.3399-1111-2222-30001", expiry: end)
        try harness.google.addSubscription(token: "sub-ends", latestOrderID: "GPA.3399-1111-2222-30002", expiry: end)
        for token in ["sub-renews", "sub-ends"] {
            let verified = try await harness.client.post(
                "/v1/verify", json: ["store": "google_play", "receipt": token])
            #expect(verified.status == 200, "\(verified.text)")
        }
        // Google renewed one (a new order of the same subscription) and let the other lapse; neither push arrived.
        let renewedUntil = Date().addingTimeInterval(30 * 86_400)
        try harness.google.addSubscription(
            token: "sub-renews", latestOrderID: "GPA.3399-1111-2222-30001..0", expiry: renewedUntil)
        try harness.google.addSubscription(
            token: "sub-ends", latestOrderID: "GPA.3399-1111-2222-30002", state: "SUBSCRIPTION_STATE_EXPIRED",
            expiry: end, autoRenew: false)
        let reads = harness.google.hits("subscriptionsv2")

        let run = try await Self.reconcile(harness)
        #expect(run.error == nil && run.tally.reread == 2 && run.tally.changed == 2, "\(run.tally) \(run.error ?? "")")
        #expect(harness.google.hits("subscriptionsv2") == reads + 2)
        #expect(try await Self.status(harness, "GPA.3399-1111-2222-30001") == "active")
        let expires =
            try await harness.client.get("/v1/subscriptions/google_play/GPA.3399-1111-2222-30001").json()[
                "expires_date_ms"] as? Int
        #expect(expires == Int(renewedUntil.timeIntervalSince1970 * 1000))
        #expect(try await Self.status(harness, "GPA.3399-1111-2222-30002") == "expired")
        try await WebhookDelivery.waitUntil { harness.receiver.bodies("/hooks").count >= 4 }
        let told = harness.receiver.bodies("/hooks").compactMap { $0["type"] as? String }.filter {
            $0 != "transaction.verified"
        }.sorted()
        #expect(told == ["subscription.expired", "subscription.renewed"], "\(told)")

        // Nothing is quiet any more: a second run asks Google nothing.
        let again = try await Self.reconcile(harness)
        #expect(again.tally == PollTally())
        #expect(harness.google.hits("subscriptionsv2") == reads + 2)
    }

    @Test func googleUnavailableStopsTheRunAndTheNextAsksAgain() async throws {
        let harness = try await GooglePlayHarness.start(quiet: .byHandOnly)
        defer { harness.stop() }
        let end = Date().addingTimeInterval(1800)
        try harness.google.addSubscription(token: "sub-later", latestOrderID: "GPA.3399-1111-2222-30003", expiry: end)
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "google_play", "receipt": "sub-later"]).status
                == 200)
        try harness.google.addSubscription(
            token: "sub-later", latestOrderID: "GPA.3399-1111-2222-30003", state: "SUBSCRIPTION_STATE_EXPIRED",
            expiry: end, autoRenew: false)
        harness.google.failFirst("subscriptionsv2", [503, 503, 503])
        let failed = try await Self.reconcile(harness)
        #expect(failed.error?.contains("the next run resumes") == true, "\(failed.error ?? "")")
        #expect(try await Self.status(harness, "GPA.3399-1111-2222-30003") == "active")
        let recovered = try await Self.reconcile(harness)
        #expect(recovered.error == nil && recovered.tally.changed == 1)
        #expect(try await Self.status(harness, "GPA.3399-1111-2222-30003") == "expired")
    }
}

/// Amazon subscriptions past their renewal date with no RTN, read back from RVS (a local fake)
/// with the user and receipt they were verified with.
@Suite struct QuietAmazonSubscriptions {
    /// One renewed (a later renewal date on the same receipt), one ended by Amazon before its
    /// renewal date (the same period, cut short).
    @Test func aRenewalAndACancellationAreReadBackFromRVS() async throws {
        let harness = try await AmazonAppstoreHarness.start(quiet: .byHandOnly)
        defer { harness.stop() }
        let user = AmazonAppstoreEndToEnd.user
        let renewal = Date().addingTimeInterval(1800)
        for receipt in ["sub-amzn-renews", "sub-amzn-ends"] {
            try harness.rvs.addReceipt(
                receipt, userID: user, productType: "SUBSCRIPTION", productID: "vip.monthly",
                purchaseDate: Date().addingTimeInterval(-60), renewalDate: renewal, termSku: "vip.monthly.1m",
                autoRenewing: true)
            let verified = try await harness.client.post(
                "/v1/verify", json: ["store": "amazon_appstore", "receipt": receipt, "amazon_user_id": user])
            #expect(verified.status == 200, "\(verified.text)")
        }
        let renewedUntil = Date().addingTimeInterval(30 * 86_400)
        try harness.rvs.addReceipt(
            "sub-amzn-renews", userID: user, productType: "SUBSCRIPTION", productID: "vip.monthly",
            purchaseDate: Date().addingTimeInterval(-60), renewalDate: renewedUntil, termSku: "vip.monthly.1m",
            autoRenewing: true)
        try harness.rvs.addReceipt(
            "sub-amzn-ends", userID: user, productType: "SUBSCRIPTION", productID: "vip.monthly",
            purchaseDate: Date().addingTimeInterval(-60), cancelDate: Date().addingTimeInterval(-30), cancelReason: 2,
            renewalDate: renewal,
            termSku: "vip.monthly.1m", autoRenewing: false)
        let reads = harness.rvs.hits.count

        let report = try await harness.service.reconcile(store: .amazonAppstore, since: nil)
        let run = try #require(report.runs.first { $0.poll == "amazon_appstore.quiet_subscriptions" })
        #expect(run.error == nil && run.tally.reread == 2 && run.tally.changed == 2, "\(run.tally) \(run.error ?? "")")
        #expect(harness.rvs.hits.count >= reads + 2)
        let renewed = try await harness.client.get("/v1/subscriptions/amazon_appstore/sub-amzn-renews").json()
        #expect(renewed["status"] as? String == "active")
        #expect(renewed["expires_date_ms"] as? Int == Int(renewedUntil.timeIntervalSince1970 * 1000))
        #expect(
            try await harness.client.get("/v1/subscriptions/amazon_appstore/sub-amzn-ends").json()["status"] as? String
                == "expired")
        try await WebhookDelivery.waitUntil { harness.receiver.bodies("/hooks").count >= 4 }
        let told = harness.receiver.bodies("/hooks").compactMap { $0["type"] as? String }.filter {
            $0 != "transaction.verified"
        }.sorted()
        #expect(told == ["subscription.expired", "subscription.renewed"], "\(told)")
        let again = try await harness.service.reconcile(store: .amazonAppstore, since: nil)
        #expect(again.runs.first?.tally == PollTally())
    }
}
