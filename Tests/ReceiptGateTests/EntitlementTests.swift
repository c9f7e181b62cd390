import AmazonAppstore
import AmazonAppstoreTestSupport
import AppStore
import AppStoreTestSupport
import Foundation
import GooglePlay
import GooglePlayTestSupport
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// What a player owns, over HTTP against a real Postgres: one service with the App Store (its
/// notifications signed by the test PKI), Google Play and Amazon's RVS (local fakes of their
/// APIs), a catalog mapping both stores' VIP products to `vip`, and a receiver for the
/// `entitlement.*` webhooks.
struct EntitlementHarness {
    let harness: VerifyHarness
    let google: FakeGooglePlay
    let amazon: FakeRVS
    let receiver: GooglePlayHarness.Receiver
    var client: SignedClient { harness.client }
    static let adminToken = "entitlements-admin-" + String(repeating: "e", count: 32)

    static let amazonPackage = "com.example.game.amazon"

    static func start(
        sweepEvery seconds: Int = 1, gameID: Int64? = 42, dialects: [any DialectProvider] = [],
        configure: (inout ServiceConfiguration) -> Void = { _ in }
    ) async throws -> EntitlementHarness {
        let google = try FakeGooglePlay()
        let amazon = try FakeRVS()
        let amazonProvider = try AmazonAppstoreProvider(
            configuration: amazon.configuration(), http: FakeRVS.http(), logger: Logger(minimumLevel: .error))
        let receiver = try GooglePlayHarness.Receiver()
        var googleConfiguration = try google.configuration()
        googleConfiguration.serviceAccountKey = nil
        googleConfiguration.voidedPurchasesInterval = nil
        let googleProvider = GooglePlayProvider(
            configuration: googleConfiguration, http: FakeGooglePlay.http(), logger: Logger(minimumLevel: .error))
        let harness = try await VerifyHarness.start(
            gameID: gameID, outbox: VerifyHarness.fastOutbox(), adminToken: adminToken,
            webhookURL: "http://127.0.0.1:\(receiver.server.port)/hooks",
            dialects: dialects, otherStores: [googleProvider.registration, amazonProvider.registration],
            configure: { configuration in
                configuration.entitlementSweepSeconds = seconds
                configuration.quietSubscriptions.intervalSeconds = 0
                configure(&configuration)
            })
        var settings = ClientSettings()
        settings.appIdentifiers[GooglePlayProvider.packageNameKind.name] = ["com.example.game"]
        settings.appIdentifiers[AmazonAppstoreProvider.packageNameKind.name] = [amazonPackage]
        settings.sealedSettings = [
            GooglePlayProvider.Setting.serviceAccountKey: try google.serviceAccountJSON(),
            AmazonAppstoreProvider.Setting.sharedSecret: FakeRVS.sharedSecret,
        ]
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
        return EntitlementHarness(harness: harness, google: google, amazon: amazon, receiver: receiver)
    }

    func stop() {
        harness.stop()
        let (google, amazon) = (google, amazon)
        Task.detached {
            await google.shutdown()
            await amazon.shutdown()
        }
        ClaimSupport.stop(receiver)
    }

    /// The VIP subscriptions of both stores grant `vip`; a non-consumable grants `no_ads`; a
    /// consumable is mapped too (it must never grant).
    func mapCatalog(client clientID: String? = nil) async throws {
        let catalog = harness.service.repositories.catalog, id = clientID ?? client.clientID
        _ = try await catalog.set(
            client: id, store: "app_store", product: "vip.monthly", entitlements: ["vip"], by: "test")
        _ = try await catalog.set(
            client: id, store: "google_play", product: "vip_monthly", entitlements: ["vip"], by: "test")
        _ = try await catalog.set(
            client: id, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test")
        _ = try await catalog.set(
            client: id, store: "app_store", product: "gems.100", entitlements: ["gems_badge"], by: "test")
    }

    /// `GET /v1/players/{player}/entitlements` as `client`: status, and the entitlements by name.
    func owned(
        _ player: String, as client: SignedClient? = nil
    ) async throws -> (status: Int, byName: [String: [String: Any]]) {
        let response = try await (client ?? self.client).get("/v1/players/\(player)/entitlements")
        let list = (try? response.json())?["entitlements"] as? [[String: Any]] ?? []
        return (
            response.status,
            Dictionary(list.map { ($0["entitlement"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
        )
    }

    /// The `entitlement.<change>` webhooks that arrived, as (entitlement, player).
    func told(_ change: String) -> [(entitlement: String, player: String)] {
        receiver.bodies("/hooks").filter { $0["type"] as? String == "entitlement.\(change)" }.compactMap { body in
            guard let data = body["data"] as? [String: Any], let grant = data["entitlement"] as? [String: Any] else {
                return nil
            }
            return (grant["entitlement"] as? String ?? "", data["player_id"] as? String ?? "")
        }
    }

    /// Claims an App Store purchase for `player` through /v1/verify.
    func claimApple(_ transaction: [String: any Sendable], for player: String) async throws {
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(transaction))
        let answer = try await client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": player])
        #expect(answer.status == 200, "\(answer.text)")
    }

    func claimGoogle(_ token: String, for player: String) async throws {
        let answer = try await client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": token, "player_id": player])
        #expect(answer.status == 200, "\(answer.text)")
    }

    static func days(_ count: Double) -> Int64 { ClaimSupport.now() + Int64(count * 86_400_000) }
}

@Suite struct Entitlements {
    @Test func grantedRenewedOnceFamilySharedAndRevokedAsTheLedgerMoves() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        try await h.mapCatalog()
        #expect(try await h.owned("p1").byName.isEmpty)

        var vip = ClaimSupport.subscription("2000000000910001", days: 10)
        vip["environment"] = "Sandbox"
        try await h.claimApple(vip, for: "p1")
        var owned = try await h.owned("p1")
        #expect(owned.status == 200)
        let granted = try #require(owned.byName["vip"], "\(owned)")
        #expect(granted["store"] as? String == "app_store")
        #expect(granted["product_id"] as? String == "vip.monthly")
        #expect(granted["transaction_id"] as? String == "2000000000910001")
        #expect(granted["environment"] as? String == "sandbox")
        #expect(granted["ownership"] as? String == "purchased")
        #expect(granted["in_grace_period"] as? Bool == false)
        #expect(abs((granted["expires_date_ms"] as? Int64 ?? 0) - EntitlementHarness.days(10)) < 120_000, "\(granted)")
        // The store has not said yet whether it renews: unknown, not "no".
        #expect(
            granted["will_renew"] is NSNull,
            "will_renew before any renewal news: \(String(describing: granted["will_renew"]))")

        // Renewed: the store tells of the next period, twice (a retry); one event, the end moved.
        let renewal: [String: any Sendable] = [
            "transactionId": "2000000000910002", "originalTransactionId": "2000000000910001",
            "type": "Auto-Renewable Subscription", "productId": "vip.monthly",
            "expiresDate": EntitlementHarness.days(40),
        ]
        let renewalInfo: [String: any Sendable] = [
            "environment": "Sandbox", "originalTransactionId": "2000000000910001", "autoRenewStatus": 1,
            "signedDate": ClaimSupport.now(),
        ]
        for _ in 0..<2 {
            let pushed = try await NotificationsDriveTheLedger.notify(
                h.harness, type: "DID_RENEW", transaction: renewal, renewal: renewalInfo)
            #expect(pushed.status == 200, "\(pushed.text)")
        }
        owned = try await h.owned("p1")
        let renewed = try #require(owned.byName["vip"])
        #expect(renewed["transaction_id"] as? String == "2000000000910002", "the latest period grants it now")
        #expect(abs((renewed["expires_date_ms"] as? Int64 ?? 0) - EntitlementHarness.days(40)) < 120_000)
        #expect(renewed["will_renew"] as? Bool == true)

        // A non-consumable shared by family; a consumable, mapped, grants nothing.
        try await h.claimApple(
            [
                "transactionId": "2000000000920001", "originalTransactionId": "2000000000920001", "productId": "noads",
                "type": "Non-Consumable", "inAppOwnershipType": "FAMILY_SHARED",
            ], for: "p1")
        try await h.claimApple(
            [
                "transactionId": "2000000000930001", "originalTransactionId": "2000000000930001",
                "productId": "gems.100",
            ], for: "p1")
        owned = try await h.owned("p1")
        #expect(Set(owned.byName.keys) == ["vip", "no_ads"], "\(owned.byName.keys)")
        #expect(owned.byName["no_ads"]?["ownership"] as? String == "family_shared")
        #expect(owned.byName["no_ads"]?["expires_date_ms"] is NSNull, "a lifetime grant has no end")

        // Refunded: taken away, once however often it is told.
        let refund: [String: any Sendable] = [
            "transactionId": "2000000000920001", "productId": "noads", "type": "Non-Consumable",
            "inAppOwnershipType": "FAMILY_SHARED", "revocationDate": ClaimSupport.now(), "revocationReason": 0,
        ]
        for _ in 0..<2 {
            #expect(
                try await NotificationsDriveTheLedger.notify(h.harness, type: "REFUND", transaction: refund).status
                    == 200)
        }
        owned = try await h.owned("p1")
        #expect(Set(owned.byName.keys) == ["vip"])

        try await WebhookDelivery.waitUntil { h.told("revoked").count == 1 }
        try await OutboxDrain.wait(h.harness.pool)
        #expect(h.told("granted").map(\.entitlement).sorted() == ["no_ads", "vip"])
        #expect(h.told("renewed").map(\.entitlement) == ["vip"])
        #expect(h.told("revoked").map(\.entitlement) == ["no_ads"])
        #expect(h.told("granted").allSatisfy { $0.player == "p1" })
        // The operator's player page shows what the player owns, and links the purchase behind it.
        let browser = ConsoleBrowserSession(port: h.harness.service.port)
        _ = try await browser.signIn(token: EntitlementHarness.adminToken)
        let page = try await browser.get("/console/players/p1").text
        #expect(page.contains(#"<td class="entitlement">vip</td>"#), "\(page)")
        #expect(page.contains("/console/purchases/app_store/2000000000910002"))
        #expect(!page.contains(#"<td class="entitlement">no_ads</td>"#), "refunded: no longer owned")
        #expect(
            try await browser.get("/console/purchases?q=p1").text.contains(#"<a href="/console/players/p1">p1</a>"#))
        #expect(
            !h.receiver.bodies("/hooks").contains {
                ($0["data"] as? [String: Any]).flatMap { $0["entitlement"] as? [String: Any] }?["entitlement"]
                    as? String == "gems_badge"
            })
    }

    @Test func oneEntitlementFromTwoStoresIsBackedByTheLaterEnd() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        try await h.mapCatalog()
        var vip = ClaimSupport.subscription("2000000000940001", days: 5)
        vip["environment"] = "Sandbox"
        try await h.claimApple(vip, for: "p2")
        try h.google.addSubscription(
            token: "g-vip-1", productID: "vip_monthly", latestOrderID: "GPA.3399-4444-5555-66666",
            expiry: Date().addingTimeInterval(30 * 86_400), autoRenew: true)
        try await h.claimGoogle("g-vip-1", for: "p2")
        var owned = try await h.owned("p2")
        let vipNow = try #require(owned.byName["vip"], "\(owned)")
        #expect(vipNow["store"] as? String == "google_play", "the later end wins: \(vipNow)")
        #expect(vipNow["product_id"] as? String == "vip_monthly")
        #expect(vipNow["will_renew"] as? Bool == true)

        // Google revokes its subscription: the App Store's still grants vip, until its own end.
        try h.google.addSubscription(
            token: "g-vip-1", productID: "vip_monthly", latestOrderID: "GPA.3399-4444-5555-66666",
            state: "SUBSCRIPTION_STATE_EXPIRED", expiry: Date().addingTimeInterval(-60), autoRenew: false)
        let revoked: [String: Any] = [
            "version": "1.0", "packageName": "com.example.game", "eventTimeMillis": String(ClaimSupport.now()),
            "subscriptionNotification": [
                "version": "1.0", "notificationType": 12, "purchaseToken": "g-vip-1",
                "subscriptionId": "vip_monthly",
            ],
        ]
        let pushed = try await RawHTTP.request(
            port: h.harness.service.port, method: "POST", path: "/v1/notifications/google-play",
            headers: ["Content-Type": "application/json", "Authorization": "Bearer \(try h.google.oidcToken())"],
            body: try FakeGooglePlay.pushBody(revoked, messageID: "pubsub-revoke-1"))
        #expect(pushed.status == 200, "\(pushed.text)")
        owned = try await h.owned("p2")
        #expect(owned.byName["vip"]?["store"] as? String == "app_store", "\(owned)")
        try await OutboxDrain.wait(h.harness.pool)
        #expect(h.told("granted").map(\.entitlement) == ["vip"], "one grant, whichever store backs it")
        #expect(h.told("revoked").isEmpty && h.told("expired").isEmpty)
    }

    @Test func anEntitlementEndsOnScheduleWithoutAnyStoreNews() async throws {
        let h = try await EntitlementHarness.start(sweepEvery: 1)
        defer { h.stop() }
        try await h.mapCatalog()
        var vip = ClaimSupport.subscription("2000000000950001")
        vip["environment"] = "Sandbox"
        // Paid up for 15 s more: long enough to be read as owned on a loaded machine.
        vip["expiresDate"] = ClaimSupport.now() + 15_000
        try await h.claimApple(vip, for: "p3")
        #expect(try await h.owned("p3").byName["vip"] != nil)
        try await WebhookDelivery.waitUntil { try await h.owned("p3").byName.isEmpty }
        try await WebhookDelivery.waitUntil { h.told("expired").count == 1 }
        #expect(h.told("expired").first?.entitlement == "vip")
        #expect(h.told("revoked").isEmpty, "an end reached is an expiry, not a revocation")
        #expect(try await h.harness.count("player_entitlements") == 0, "the sweep removed the grant")
    }

    @Test func aClientSeesOnlyWhatItsGamesPlayersOwnUnderItsOwnCatalog() async throws {
        let h = try await EntitlementHarness.start(gameID: 42)
        defer { h.stop() }
        try await h.mapCatalog()
        try await h.claimApple(
            [
                "transactionId": "2000000000960001", "originalTransactionId": "2000000000960001", "productId": "noads",
                "type": "Non-Consumable",
            ], for: "shared-id")
        #expect(try await h.owned("shared-id").byName["no_ads"] != nil)

        // Another game, the same player id: nothing, even with the same catalog.
        var other = VerifyHarness.settings(name: "Other game", environments: [.production, .sandbox], gameID: 77)
        other.webhookURL = nil
        let otherGame = try await h.harness.service.clients.create(other)
        let otherClient = SignedClient(
            port: h.harness.service.port, clientID: otherGame.client.clientID, secret: otherGame.secret)
        try await h.mapCatalog(client: otherGame.client.clientID)
        let seen = try await h.owned("shared-id", as: otherClient)
        #expect(seen.status == 200 && seen.byName.isEmpty, "\(seen)")

        // A second client of the same game sees the purchase, through its own catalog only.
        let sibling = try await h.harness.service.clients.create(
            VerifyHarness.settings(name: "Same game", environments: [.sandbox], gameID: 42))
        let siblingClient = SignedClient(
            port: h.harness.service.port, clientID: sibling.client.clientID, secret: sibling.secret)
        #expect(try await h.owned("shared-id", as: siblingClient).byName.isEmpty, "no catalog, no entitlements")
        _ = try await h.harness.service.repositories.catalog.set(
            client: sibling.client.clientID, store: "app_store", product: "noads",
            entitlements: ["ad_free"], by: "test")
        #expect(Set(try await h.owned("shared-id", as: siblingClient).byName.keys) == ["ad_free"])

        // A production-only client of the game: a sandbox purchase grants it nothing, even mapped.
        let production = try await h.harness.service.clients.create(
            VerifyHarness.settings(name: "Store build", environments: [.production], gameID: 42))
        _ = try await h.harness.service.repositories.catalog.set(
            client: production.client.clientID, store: "app_store", product: "noads",
            entitlements: ["no_ads"], by: "test")
        let productionClient = SignedClient(
            port: h.harness.service.port, clientID: production.client.clientID, secret: production.secret)
        #expect(try await h.owned("shared-id", as: productionClient).byName.isEmpty)
        #expect(
            try await h.harness.count("player_entitlements WHERE client_id = '\(production.client.clientID)'") == 0,
            "not even indexed")

        // The first client stops accepting sandbox: the sandbox grant is taken away, and told.
        var productionOnly = ClientSettings()
        productionOnly.environments = [.production]
        _ = try await h.harness.service.clients.update(h.client.clientID, productionOnly)
        #expect(try await h.harness.count("player_entitlements WHERE client_id = '\(h.client.clientID)'") == 0)
        try await WebhookDelivery.waitUntil { h.told("revoked").count == 1 }

        // A ledger with catalogs and no index (one from before it) is built without telling anyone.
        let index = EntitlementRepository(pool: h.harness.pool)
        try await h.harness.pool.execute("DELETE FROM player_entitlements")
        #expect(try await index.needsBuilding())
        let queued = try await h.harness.count("outbox")
        #expect(try await index.refreshCatalogs(announce: false) > 0)
        #expect(try await h.harness.count("player_entitlements WHERE client_id = '\(sibling.client.clientID)'") == 1)
        #expect(try await h.harness.count("outbox") == queued, "building the index queues no webhook")
        #expect(try await !index.needsBuilding())

        // Unsigned or signed with version 1: refused.
        let unsigned = try await RawHTTP.request(
            port: h.harness.service.port, path: "/v1/players/shared-id/entitlements")
        #expect(unsigned.status == 401, "\(unsigned.text)")
        #expect(try await h.client.get("/v1/players/shared-id/entitlements", version: "1").status == 401)
        let tooLong = try await h.client.get("/v1/players/\(String(repeating: "x", count: 300))/entitlements")
        #expect(tooLong.status == 400, "\(tooLong.text)")
    }

    @Test func theCatalogEditedWhileReadsRunChangesWhatTheyAnswer() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        for index in 0..<20 {
            try await h.claimApple(
                [
                    "transactionId": "20000000009700\(String(format: "%02d", index))", "productId": "noads",
                    "type": "Non-Consumable",
                    "originalTransactionId": "20000000009700\(String(format: "%02d", index))",
                ], for: "reader-\(index % 5)")
        }
        let reads = Task {
            var statuses: [Int: Int] = [:]
            while !Task.isCancelled {
                let answer = try await h.client.get("/v1/players/reader-\(Int.random(in: 0..<5))/entitlements")
                statuses[answer.status, default: 0] += 1
            }
            return statuses
        }
        let catalog = h.harness.service.repositories.catalog
        _ = try await catalog.set(
            client: h.client.clientID, store: "app_store", product: "noads", entitlements: ["no_ads"], by: "test")
        for index in 0..<5 { #expect(Set(try await h.owned("reader-\(index)").byName.keys) == ["no_ads"]) }
        _ = try await catalog.set(
            client: h.client.clientID, store: "app_store", product: "noads", entitlements: ["no_ads", "supporter"],
            by: "test")
        for index in 0..<5 {
            #expect(Set(try await h.owned("reader-\(index)").byName.keys) == ["no_ads", "supporter"])
        }
        #expect(
            try await catalog.remove(
                client: h.client.clientID, store: "app_store", product: "noads", entitlement: "no_ads", by: "test"))
        for index in 0..<5 { #expect(Set(try await h.owned("reader-\(index)").byName.keys) == ["supporter"]) }
        reads.cancel()
        let statuses = try await reads.value
        #expect(Set(statuses.keys) == [200], "every read answered while the catalog changed: \(statuses)")
        try await OutboxDrain.wait(h.harness.pool)
        #expect(h.told("granted").count == 10, "no_ads then supporter, for five players")
        #expect(h.told("revoked").filter { $0.entitlement == "no_ads" }.count == 5, "taken away with its mapping")
    }
}

/// DATABASE_READ_URL with a real streaming standby whose replay the test pauses: a read right
/// after a claim, while the standby has not replayed it, is answered by the primary; once the
/// standby caught up, it answers.
@Suite struct EntitlementReadsFromAStandby {
    static func readsServed(_ h: EntitlementHarness) async throws -> (standby: Int, lagging: Int) {
        let metrics = try await RawHTTP.request(port: h.harness.service.port, path: "/metrics").text
        func value(_ prefix: String) -> Int {
            metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { $0.split(separator: " ").last }
                .flatMap { Int($0) } ?? -1
        }
        return (
            value(#"receiptgate_ledger_reads_total{served_by="standby"}"#),
            value(#"receiptgate_ledger_reads_total{served_by="primary",reason="lagging"}"#)
        )
    }

    @Test(.timeLimit(.minutes(4)))
    func aLaggingStandbyIsSkippedForThePrimaryAndACaughtUpOneAnswers() async throws {
        let primary = try await TestDatabase.makePrivateCluster()
        let standby = try await StreamingStandby.start(following: primary, applyDelay: "0")
        defer { standby.stop() }
        let h = try await EntitlementHarness.start { configuration in
            configuration.databaseURL = try? primary.connectionString
            configuration.databaseReadURL = standby.connectionString
            configuration.readMaxLagMilliseconds = 1000
        }
        defer { h.stop() }
        try await h.mapCatalog()
        let onStandby = PostgresPool(.init(connectionString: standby.connectionString, size: 1))
        defer { onStandby.shutdown() }
        try await WebhookDelivery.waitUntil {
            try await onStandby.query("SELECT count(*) AS n FROM pg_tables WHERE tablename = 'player_entitlements'")[0]
                .decode("n", as: Int.self) == 1
        }
        // The standby stops replaying (as one does behind a long query or a slow disk), the
        // primary writes on, and reads go on until the service sees the standby behind it.
        try await onStandby.execute("SELECT pg_wal_replay_pause()")
        try await h.claimApple(
            [
                "transactionId": "2000000000980002", "originalTransactionId": "2000000000980002", "productId": "noads",
                "type": "Non-Consumable",
            ], for: "earlier")
        try await WebhookDelivery.waitUntil {
            _ = try await h.owned("earlier")
            return try await Self.readsServed(h).lagging > 0
        }

        try await h.claimApple(
            [
                "transactionId": "2000000000980001", "originalTransactionId": "2000000000980001", "productId": "noads",
                "type": "Non-Consumable",
            ], for: "fresh")
        let standbyHasIt = {
            try await onStandby.query("SELECT count(*) AS n FROM player_entitlements WHERE player_id = 'fresh'")[0]
                .decode("n", as: Int.self) == 1
        }
        let before = try await Self.readsServed(h)
        let read = try await h.owned("fresh")
        #expect(read.status == 200)
        #expect(read.byName["no_ads"] != nil, "right after the claim, the read is fresh: \(read.byName)")
        #expect(try await !standbyHasIt(), "the standby had not replayed the claim yet, so the primary answered")
        #expect(try await Self.readsServed(h).lagging > before.lagging)

        try await onStandby.execute("SELECT pg_wal_replay_resume()")
        try await WebhookDelivery.waitUntil { try await standbyHasIt() }
        // Caught up (nothing left to replay): the standby answers.
        try await WebhookDelivery.waitUntil {
            let served = try await Self.readsServed(h).standby
            let answer = try await h.owned("fresh")
            let after = try await Self.readsServed(h).standby
            return answer.byName["no_ads"] != nil && after > served
        }
    }
}
