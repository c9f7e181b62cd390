import Foundation
import GooglePlay
import GooglePlayTestSupport
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// Google Play's 2025–26 surface through the whole service: rentals and pre-orders of one-time
/// products with purchase options, the operator's subscription changes through `subscriptionsv2`,
/// and reconciliation confirming orders by id; the fake refuses (and remembers) every deprecated path.
@Suite struct GooglePlayBillingEndToEnd {
    static let adminToken = String(repeating: "g", count: 40)

    static func verify(
        _ harness: GooglePlayHarness, _ token: String, player: String, at clock: MovableClock? = nil
    ) async throws -> RawHTTP.Response {
        try await harness.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": token, "player_id": player],
            timestamp: clock.map { Int($0.now().timeIntervalSince1970) })
    }

    static func count(_ harness: GooglePlayHarness, _ sql: PostgresQuery) async throws -> Int {
        try await harness.pool.query(sql)[0].decode("n", as: Int.self)
    }

    static func entitlements(_ harness: GooglePlayHarness, _ player: String) async throws -> [String] {
        let answer = try await harness.client.get("/v1/players/\(player)/entitlements").json()
        return (answer["entitlements"] as? [[String: Any]] ?? []).compactMap { $0["entitlement"] as? String }.sorted()
    }

    @Test func aRentalGrantsItsOptionsEntitlementUntilItsPeriodEndsOnTheServicesClock() async throws {
        let clock = MovableClock()
        let harness = try await GooglePlayHarness.start(now: clock.now)
        defer { harness.stop() }
        let completed = Int64(Date().addingTimeInterval(-3600).timeIntervalSince1970) * 1000
        try harness.google.addOneTimeProduct(productID: "movie", rentals: ["rent-1d": "P1D"], buys: ["buy"])
        try harness.google.addProduct(
            token: "tok-rent", productID: "movie", orderID: "GPA.8000-0000-0000-00001", purchaseTimeMillis: completed,
            purchaseOption: "rent-1d", offer: "intro", rent: true)
        try harness.google.addProduct(
            token: "tok-own", productID: "movie", orderID: "GPA.8000-0000-0000-00002", purchaseTimeMillis: completed,
            purchaseOption: "buy")
        let catalog = harness.service.repositories.catalog, client = harness.client.clientID
        _ = try await catalog.set(
            client: client, store: "google_play", product: "movie:rent-1d", entitlements: ["movie_rental"], by: "test")
        _ = try await catalog.set(
            client: client, store: "google_play", product: "movie:buy", entitlements: ["movie_owned"], by: "test")

        let rented = try await Self.verify(harness, "tok-rent", player: "renter")
        #expect(rented.status == 200, "\(rented.text)")
        let transaction = try #require(try rented.json()["transaction"] as? [String: Any])
        #expect(transaction["purchase_option_id"] as? String == "rent-1d")
        #expect((transaction["offer"] as? [String: Any])?["identifier"] as? String == "intro")
        #expect(transaction["expires_date_ms"] as? Int == Int(completed + 86_400_000))
        #expect(transaction["state"] as? String == "active")
        #expect(try await Self.entitlements(harness, "renter") == ["movie_rental"], "the rent option's mapping only")
        #expect(try await Self.verify(harness, "tok-own", player: "owner").status == 200)
        #expect(try await Self.entitlements(harness, "owner") == ["movie_owned"])

        // A day later on the service's clock the rental has ended; the purchase to keep has not.
        clock.move(by: 2 * 86_400)
        let later = try await Self.verify(harness, "tok-rent", player: "renter", at: clock)
        #expect(later.status == 200, "\(later.text)")
        #expect(try later.json()["duplicate"] as? Bool == true)
        #expect((try later.json()["transaction"] as? [String: Any])?["state"] as? String == "expired")
        let owned = try await Self.verify(harness, "tok-own", player: "owner", at: clock)
        #expect((try owned.json()["transaction"] as? [String: Any])?["state"] as? String == "active")
        // The ended rental no longer grants its entitlement (read back on the machine's time, which
        // the request signatures use).
        clock.move(by: -2 * 86_400)
        #expect(try await Self.entitlements(harness, "renter") == [])
        #expect(try await Self.entitlements(harness, "owner") == ["movie_owned"])
        #expect(harness.google.state.deprecatedCalls.get().isEmpty)
    }

    @Test func aPreorderIsDeliveredOnlyOnceGoogleFulfilsIt() async throws {
        let harness = try await GooglePlayHarness.start()
        defer { harness.stop() }
        try harness.google.addProduct(
            token: "tok-preorder", productID: "expansion", orderID: "GPA.8200-0000-0000-00001", state: 2,
            purchaseOption: "preorder", offer: "early-bird", preorder: true)
        let pending = try await Self.verify(harness, "tok-preorder", player: "fan")
        #expect(pending.status == 422, "\(pending.text)")
        #expect((try pending.json()["message"] as? String)?.hasPrefix("PURCHASE_PENDING") == true)
        #expect(try await Self.count(harness, "SELECT count(*) AS n FROM transactions") == 0)

        // Released: Google fulfils it and says so; the game's next verification delivers it, once.
        try harness.google.fulfil(
            token: "tok-preorder", purchaseTimeMillis: Int64(Date().timeIntervalSince1970) * 1000)
        let pushed = try await harness.push(
            [
                "version": "1.0", "packageName": "com.example.game",
                "eventTimeMillis": String(Int64(Date().timeIntervalSince1970 * 1000)),
                "oneTimeProductNotification": [
                    "version": "1.0", "notificationType": 1, "purchaseToken": "tok-preorder", "sku": "expansion",
                ],
            ], messageID: "msg-preorder-fulfilled")
        #expect(pushed.status == 200, "\(pushed.text)")
        let delivered = try await Self.verify(harness, "tok-preorder", player: "fan")
        #expect(delivered.status == 200, "\(delivered.text)")
        #expect(try delivered.json()["duplicate"] as? Bool == false)
        let transaction = try #require(try delivered.json()["transaction"] as? [String: Any])
        #expect(transaction["purchase_option_id"] as? String == "preorder")
        #expect((transaction["offer"] as? [String: Any])?["identifier"] as? String == "early-bird")
        let again = try await Self.verify(harness, "tok-preorder", player: "fan")
        #expect(try again.json()["duplicate"] as? Bool == true)
        try await WebhookDelivery.waitUntil {
            harness.receiver.bodies("/hooks").contains { $0["type"] as? String == "transaction.verified" }
        }
        #expect(harness.receiver.bodies("/hooks").filter { $0["type"] as? String == "transaction.verified" }.count == 1)
        #expect(harness.google.state.deprecatedCalls.get().isEmpty)
    }

    @Test func anOperatorDefersAndRevokesThroughSubscriptionsV2AuditedAndTheLedgerFollowsGoogle() async throws {
        let harness = try await GooglePlayHarness.start(adminToken: Self.adminToken)
        defer { harness.stop() }
        let order = "GPA.8300-0000-0000-00001"
        let end = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 5 * 86_400).rounded(.down))
        try harness.google.addSubscription(token: "sub-op", latestOrderID: order, expiry: end)
        #expect(try await Self.verify(harness, "sub-op", player: "subscriber").status == 200)
        func admin(
            _ action: String, _ body: [String: Any], token: String = Self.adminToken, id: String = order
        )
            async throws -> RawHTTP.Response
        {
            try await RawHTTP.request(
                port: harness.service.port, method: "POST", path: "/admin/transactions/google_play/\(id)/\(action)",
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                body: try JSONSerialization.data(withJSONObject: body))
        }
        // A caller's mistakes: clear 4xx answers, nothing asked of Google.
        #expect(try await admin("defer", ["days": 0]).status == 400)
        #expect(try await admin("defer", ["days": "soon"]).status == 400)
        #expect(try await admin("revoke", ["refund": "half"]).status == 400)
        #expect(try await admin("revoke", [:], id: "GPA.0000-unknown").status == 404)
        #expect(try await admin("revoke", [:], token: "wrong-token-wrong-token-wrong-token-1234").status == 401)
        #expect(harness.google.state.subscriptionChanges.get().isEmpty)

        let deferred = try await admin("defer", ["days": 10])
        #expect(deferred.status == 202, "\(deferred.text)")
        let newEnd = end.addingTimeInterval(10 * 86_400)
        #expect(try deferred.json()["new_expires_date_ms"] as? Int == Int(newEnd.timeIntervalSince1970 * 1000))
        // Google says it deferred: the ledger's end moves.
        let told = try await harness.push(Self.subscriptionPush(type: 9, token: "sub-op"), messageID: "msg-deferred")
        #expect(told.status == 200, "\(told.text)")
        let subscription = try await harness.client.get("/v1/subscriptions/google_play/\(order)").json()
        #expect(subscription["expires_date_ms"] as? Int == Int(newEnd.timeIntervalSince1970 * 1000), "\(subscription)")

        let revoked = try await admin("revoke", ["refund": "prorated"])
        #expect(revoked.status == 202, "\(revoked.text)")
        let changes = harness.google.state.subscriptionChanges.get()
        #expect(changes.last == #"revoke sub-op {"revocationContext":{"proratedRefund":{}}}"#, "\(changes)")
        // Asked, not done: the ledger moves when Google's notification is borne out by its order.
        #expect(try await harness.transaction(order)?.decode("state", as: String.self) == "active")
        let ended = try await harness.push(Self.subscriptionPush(type: 12, token: "sub-op"), messageID: "msg-revoked")
        #expect(ended.status == 200, "\(ended.text)")
        #expect(try await harness.transaction(order)?.decode("state", as: String.self) == "refunded")
        #expect(
            try await Self.count(
                harness,
                "SELECT count(*) AS n FROM console_audit WHERE action = 'subscription-defer' AND who = 'admin-api'")
                == 1)
        #expect(
            try await Self.count(
                harness, "SELECT count(*) AS n FROM console_audit WHERE action = 'subscription-revoke'")
                == 1)
        // The purchase token (what Google takes to act on the subscription) is in no answer or audit row.
        #expect(!deferred.text.contains("sub-op") && !revoked.text.contains("sub-op"))
        #expect(
            try await Self.count(harness, "SELECT count(*) AS n FROM console_audit WHERE target LIKE '%sub-op%'") == 0)

        // The console asks too, after a confirmation, and audits who asked.
        try harness.google.addSubscription(token: "sub-console", latestOrderID: "GPA.8300-0000-0000-00002", expiry: end)
        #expect(try await Self.verify(harness, "sub-console", player: "other").status == 200)
        let console = ConsoleBrowserSession(port: harness.service.port)
        #expect(try await console.signIn(token: Self.adminToken).status == 303)
        let page = try await console.get("/console/purchases/google_play/GPA.8300-0000-0000-00002")
        #expect(page.text.contains("id=\"subscription-cancel\""), "\(page.text)")
        let path = "/console/purchases/google_play/GPA.8300-0000-0000-00002/subscription/cancel"
        #expect(try await console.post(path, []).status == 200)
        #expect(harness.google.state.subscriptionChanges.get().count == 2, "confirmed first")
        #expect(try await console.post(path, [("confirm", "yes")]).status == 303)
        #expect(harness.google.state.subscriptionChanges.get().last?.hasPrefix("cancel sub-console ") == true)
        #expect(
            try await Self.count(
                harness, "SELECT count(*) AS n FROM console_audit WHERE action = 'subscription-cancel'")
                == 1)
        #expect(harness.google.state.deprecatedCalls.get().isEmpty)
    }

    @Test func aQuietSubscriptionWhoseOrderGoogleRefundedIsARefundNotAnExpiry() async throws {
        let harness = try await GooglePlayHarness.start(quiet: .byHandOnly)
        defer { harness.stop() }
        let end = Date().addingTimeInterval(1800)
        try harness.google.addSubscription(
            token: "sub-refunded", latestOrderID: "GPA.8400-0000-0000-00001", expiry: end)
        try harness.google.addSubscription(token: "sub-lapsed", latestOrderID: "GPA.8400-0000-0000-00002", expiry: end)
        for token in ["sub-refunded", "sub-lapsed"] {
            #expect(try await Self.verify(harness, token, player: "p-\(token)").status == 200)
        }
        // Both read EXPIRED with no push; only one's order was refunded.
        for (token, order) in [
            ("sub-refunded", "GPA.8400-0000-0000-00001"), ("sub-lapsed", "GPA.8400-0000-0000-00002"),
        ] {
            try harness.google.addSubscription(
                token: token, latestOrderID: order, state: "SUBSCRIPTION_STATE_EXPIRED", expiry: end, autoRenew: false)
        }
        try harness.google.setOrder("GPA.8400-0000-0000-00001", token: "sub-refunded", state: "REFUNDED")
        let report = try await harness.service.reconcile(store: .googlePlay, since: nil)
        let run = try #require(report.runs.first { $0.poll == "google_play.quiet_subscriptions" })
        #expect(run.error == nil && run.tally.changed == 2, "\(run.tally) \(run.error ?? "")")
        #expect(
            try await harness.transaction("GPA.8400-0000-0000-00001")?.decode("state", as: String.self) == "refunded")
        #expect(
            try await harness.transaction("GPA.8400-0000-0000-00002")?.decode("state", as: String.self) == "expired")
        try await WebhookDelivery.waitUntil {
            harness.receiver.bodies("/hooks").contains { $0["type"] as? String == "transaction.refunded" }
        }
        #expect(harness.google.hits("orders") >= 2)
        #expect(harness.google.state.deprecatedCalls.get().isEmpty)
    }

    static func subscriptionPush(type: Int, token: String) -> [String: Any] {
        [
            "version": "1.0", "packageName": "com.example.game",
            "eventTimeMillis": String(Int64(Date().timeIntervalSince1970 * 1000)),
            "subscriptionNotification": ["version": "1.0", "notificationType": type, "purchaseToken": token],
        ]
    }
}
