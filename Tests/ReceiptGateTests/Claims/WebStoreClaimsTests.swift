import AppStoreTestSupport
import Foundation
import HTTPServer
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// What the core does for a store whose endpoint belongs to one client and whose signed events
/// name their buyer (a web shop), shown with a made-up one declared here: the path's client is
/// found before the provider is asked, the buyer's purchase is claimed as a first verification
/// is, the same event twice claims once, another player's verify is a conflict, a request may
/// carry several purchases, the store answers in its own terms, and a dispute is told with its
/// detail and revokes only when it says so.
@Suite struct WebStoreClaims {
    static let store = StoreID(rawValue: "acme_web")
    static let accounts = AppIdentifierKind(name: "acme_web_account", flag: "acme-web-account", help: "Acme account")
    static let declaration = StoreDeclaration(
        store: store, displayName: "Acme Web", identifiers: accounts, vendorCode: "ACMEWEB",
        operatingSystems: [.web], evidenceShapes: [.purchaseToken])

    /// Believes a request whose `x-acme-signature` is `signed` (the signature check is each
    /// store's own business); its body lists purchases, a player to validate, or a dispute.
    struct AcmeWeb: StoreProvider, NotificationReceiving {
        var store: StoreID { WebStoreClaims.store }
        var notificationPath: String { "/v1/notifications/acme-web/{client_id}" }

        /// `order:<transaction id>:<buyer>`: an order the store says that player paid.
        func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase] {
            let parts = evidence.split(separator: ":").map(String.init)
            guard parts.count == 3, parts[0] == "order" else {
                throw StoreVerificationError(code: .verificationFailed, reason: "NOT_AN_ORDER", message: evidence)
            }
            var purchase = VerifiedPurchase(
                store: WebStoreClaims.store, environment: .production, transactionID: parts[1])
            purchase.productID = "gems"
            purchase.kind = .nonConsumable
            purchase.appIdentifier = context.appIdentifiers.first
            purchase.purchaseDate = Date()
            purchase.buyer = parts[2]
            return [purchase]
        }

        func receiveNotification(
            _ request: NotificationRequest, registered: RegisteredApps
        ) async throws -> StoreNotification {
            try await receiveNotifications(request, registered: registered)[0]
        }

        func receiveNotifications(
            _ request: NotificationRequest, registered: RegisteredApps
        ) async throws -> [StoreNotification] {
            guard request.headers["x-acme-signature"] == "signed" else {
                throw NotificationRejection(.forged, reason: "BAD_SIGNATURE", message: "not signed")
            }
            guard let client = request.pathClient else {
                throw NotificationRejection(.malformed, reason: "NO_CLIENT", message: "the core names the client")
            }
            guard let body = try? JSONSerialization.jsonObject(with: request.body) as? [String: Any] else {
                throw NotificationRejection(.malformed, reason: "NOT_JSON", message: "not JSON")
            }
            if let player = body["validate"] as? String {
                let known = try await request.knowsPlayer(player)
                throw NotificationRejection(.ignored, reason: known ? "KNOWN" : "UNKNOWN", message: player)
            }
            let event = body["event"] as? String ?? "evt"
            let claimedBy = body["player"] as? String, revokes = body["revoke"] as? Bool == true
            let dispute = body["dispute"] as? String
            return (body["items"] as? [[String: String]] ?? []).map { item in
                var purchase = VerifiedPurchase(
                    store: WebStoreClaims.store, environment: .production, transactionID: item["id"] ?? "")
                purchase.productID = item["product"]
                purchase.kind = .nonConsumable
                purchase.appIdentifier = client.client.appIdentifiers(WebStoreClaims.accounts).first
                purchase.purchaseDate = Date()
                var news = StoreEvent(kind: .oneTimeCharge, purchase: purchase, claimedBy: claimedBy)
                if let dispute {
                    news = StoreEvent(
                        kind: .disputed, purchase: purchase,
                        dispute: DisputeNews(
                            id: dispute, reason: "fraudulent", amountMilliunits: 4990, currency: "USD",
                            revokes: revokes))
                }
                var notification = StoreNotification(
                    store: WebStoreClaims.store, notificationID: "\(event)/\(purchase.transactionID)",
                    type: news.kind.rawValue, subtype: nil, environment: .production,
                    appIdentifier: purchase.appIdentifier, transactionID: purchase.transactionID,
                    originalTransactionID: nil, productID: purchase.productID, signedAt: nil,
                    decodedJSON: request.body)
                notification.event = news
                return notification
            }
        }

        func answer(to outcome: NotificationOutcome) -> NotificationAnswer? {
            switch outcome {
            case .accepted: NotificationAnswer(status: 204)
            case .refused(let rejection) where rejection.reason == "UNKNOWN":
                NotificationAnswer(
                    status: 400, body: Data(#"{"error":"UNKNOWN_PLAYER"}"#.utf8), contentType: "application/json")
            default: nil
            }
        }
    }

    static let registration = StoreRegistration(declaration, verifier: AcmeWeb(), notifications: AcmeWeb())

    static let adminToken = "web-store-console-token-0123456789"

    static func start(_ receiver: GooglePlayHarness.Receiver) async throws -> VerifyHarness {
        let hooks = "http://127.0.0.1:\(receiver.server.port)/hooks"
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(), adminToken: adminToken, webhookURL: hooks, deliveryURL: hooks,
            otherStores: [registration])
        var settings = ClientSettings()
        settings.appIdentifiers = [accounts.name: ["acct_1"]]
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
        return harness
    }

    static func push(
        _ harness: VerifyHarness, _ body: [String: Any], client: String? = nil, signed: Bool = true
    ) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: harness.client.port, method: "POST",
            path: "/v1/notifications/acme-web/\(client ?? harness.client.clientID)",
            headers: ["Content-Type": "application/json", "x-acme-signature": signed ? "signed" : "no"],
            body: try JSONSerialization.data(withJSONObject: body))
    }

    nonisolated(unsafe) static let paid: [String: Any] = [
        "event": "evt_1", "player": "player-7",
        "items": [["id": "li_1", "product": "gems"], ["id": "li_2", "product": "vip"]],
    ]

    @Test func theBuyersPurchaseIsClaimedOnceAndDeliveredToThem() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.start(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }

        let first = try await Self.push(harness, Self.paid)
        #expect(first.status == 204, "the store's own answer: \(first.text)")
        #expect(try await Self.push(harness, Self.paid).status == 204, "the same event again")
        try await OutboxDrain.wait(harness.pool)
        for item in ["li_1", "li_2"] {
            #expect(ClaimSupport.received(receiver, "transaction.verified", about: item).count == 1)
            let deliveries = ClaimSupport.received(receiver, "entitlement.delivery", about: item)
            #expect(deliveries.count == 1 && deliveries.first?["player_id"] as? String == "player-7", "\(deliveries)")
            let record = try await ClaimSupport.record(harness.client, store: "acme_web", item)
            #expect((record.transaction["claim"] as? [String: Any])?["player_id"] as? String == "player-7")
        }
        // Another player named for the same purchase later: the buyer keeps it, the newcomer is the conflict.
        var other = Self.paid
        (other["event"], other["player"]) = ("evt_9", "player-9")
        #expect(try await Self.push(harness, other).status == 204)
        try await OutboxDrain.wait(harness.pool)
        let conflicts = ClaimSupport.received(receiver, "transaction.claim_conflict", about: "li_1")
        #expect(conflicts.count == 1, "\(receiver.bodies("/hooks"))")
        #expect((conflicts.first?["claimed_by"] as? [String: Any])?["player_id"] as? String == "player-9")
        #expect(ClaimSupport.received(receiver, "transaction.verified", about: "li_1").count == 1)
        await harness.service.shutdown()
    }

    @Test func theConsoleShowsOneStoresPurchases() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.start(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        #expect(try await Self.push(harness, Self.paid).status == 204)
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000444444444"]))
        let verified = try await ClaimSupport.claim(harness.client, receipt: receipt)
        #expect(verified.status == 200, "\(verified.text)")
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.adminToken)
        let web = try await browser.get("/console/purchases?store=acme_web")
        #expect(web.text.contains(#"href="/console/purchases/acme_web/li_1""#), "\(web.text)")
        #expect(!web.text.contains("2000000444444444"))
        #expect(web.text.contains("<strong>Acme Web</strong>"))
        let apps = try await browser.get("/console/purchases?store=app_store")
        #expect(apps.text.contains("2000000444444444") && !apps.text.contains("li_1"))
        let all = try await browser.get("/console/purchases")
        #expect(all.text.contains("2000000444444444") && all.text.contains("li_1"))
        await harness.service.shutdown()
    }

    /// The store names the buyer: a verification for another player, before the store's own
    /// notification came, claims it for the buyer and answers the newcomer as the conflict.
    @Test func aPurchaseTheStoreNamesItsBuyerForIsTheBuyersWhoeverPresentsIt() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.start(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let stranger = try await ClaimSupport.claim(
            harness.client, store: "acme_web", receipt: "order:li_77:player-7", for: ["player_id": "player-9"])
        #expect(stranger.status == 200, "\(stranger.text)")
        let answer = try stranger.json()
        #expect(answer["duplicate"] as? Bool == true, "never a first claim for the newcomer: \(answer)")
        #expect((answer["first_claimed_by"] as? [String: Any])?["player_id"] as? String == "player-7")
        let buyer = try await ClaimSupport.claim(
            harness.client, store: "acme_web", receipt: "order:li_77:player-7", for: ["player_id": "player-7"])
        #expect(try buyer.json()["duplicate"] as? Bool == true, "the buyer's own claim is on record")
        try await OutboxDrain.wait(harness.pool)
        let deliveries = ClaimSupport.received(receiver, "entitlement.delivery", about: "li_77")
        #expect(deliveries.count == 1 && deliveries.first?["player_id"] as? String == "player-7", "\(deliveries)")
        let conflicts = ClaimSupport.received(receiver, "transaction.claim_conflict", about: "li_77")
        #expect((conflicts.first?["claimed_by"] as? [String: Any])?["player_id"] as? String == "player-9")
        await harness.service.shutdown()
    }

    /// A client's endpoint, signed with its own secret, says nothing of another client's
    /// purchases, and the ids its bodies carry never stand in for another client's.
    @Test func oneClientsNotificationsNeverMoveAnothersPurchases() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.start(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        var settings = ClientSettings()
        settings.name = "another game"
        settings.gameID = .some(43)
        settings.appIdentifiers = [Self.accounts.name: ["acct_2"]]
        let other = try await harness.service.clients.create(settings).client.clientID
        // The other client sends first what will be the first client's ids.
        let squatted = try await Self.push(
            harness, ["event": "evt_1", "player": "player-x", "items": [["id": "li_other", "product": "gems"]]],
            client: other)
        #expect(squatted.status == 204)
        #expect(try await Self.push(harness, Self.paid).status == 204)
        #expect(try await ClaimSupport.record(harness.client, store: "acme_web", "li_1").status == 200, "recorded")
        // A dispute the other client's endpoint tells of the first client's purchase changes nothing.
        let foreign = try await Self.push(
            harness,
            ["event": "evt_5", "dispute": "dp_9", "revoke": true, "items": [["id": "li_1", "product": "gems"]]],
            client: other)
        #expect(foreign.status == 204)
        try await OutboxDrain.wait(harness.pool)
        let record = try await ClaimSupport.record(harness.client, store: "acme_web", "li_1")
        #expect(record.transaction["state"] as? String == "active", "\(record.transaction)")
        #expect(ClaimSupport.received(receiver, "transaction.disputed", about: "li_1").isEmpty)
        await harness.service.shutdown()
    }

    /// A buyer id the API would refuse: the purchase is recorded, unclaimed, not refused (the
    /// money was taken).
    @Test func aBuyerIdTheAPIRefusesLeavesThePurchaseUnclaimed() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.start(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let odd = try await Self.push(
            harness,
            [
                "event": "evt_odd", "player": String(repeating: "p", count: 300),
                "items": [["id": "li_odd", "product": "gems"]],
            ])
        #expect(odd.status == 204, "\(odd.text)")
        #expect(
            try await ClaimSupport.record(harness.client, store: "acme_web", "li_odd").status == 404,
            "nothing claimed: a verification by its player can claim it later")
        #expect(
            try await harness.count("store_notifications WHERE notification_id LIKE '%evt_odd%'") == 1,
            "the notification is kept")
        await harness.service.shutdown()
    }

    @Test func onlyAClientWithAnAppOfTheStoreHasAnEndpoint() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.start(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        for id in ["rgc_000000000000000000000000", "not-a-client", String(repeating: "x", count: 300)] {
            let unknown = try await Self.push(harness, Self.paid, client: id)
            #expect(unknown.status == 404, "\(id): \(unknown.text)")
        }
        // A client without an app of this store has none either.
        var bareSettings = ClientSettings()
        bareSettings.name = "no acme"
        let bare = try await harness.service.clients.create(bareSettings)
        #expect(try await Self.push(harness, Self.paid, client: bare.client.clientID).status == 404)
        let forged = try await Self.push(harness, Self.paid, signed: false)
        #expect(forged.status == 401)
        #expect(try await ClaimSupport.record(harness.client, store: "acme_web", "li_1").status == 404)
        await harness.service.shutdown()
    }

    @Test func theStoreAsksWhetherAPlayerIsKnown() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.start(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let unknown = try await Self.push(harness, ["validate": "player-7"])
        #expect(unknown.status == 400 && unknown.text.contains("UNKNOWN_PLAYER"), "\(unknown.text)")
        #expect(try await Self.push(harness, Self.paid).status == 204)
        let known = try await Self.push(harness, ["validate": "player-7"])
        #expect(known.status == 200 && known.text.contains("KNOWN"), "\(known.text)")
        await harness.service.shutdown()
    }

    @Test func aDisputeIsToldWithItsDetailAndRevokesOnlyWhenItSaysSo() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await Self.start(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        #expect(try await Self.push(harness, Self.paid).status == 204)
        let kept = try await Self.push(
            harness, ["event": "evt_2", "dispute": "dp_1", "items": [["id": "li_1", "product": "gems"]]])
        #expect(kept.status == 204)
        let revoked = try await Self.push(
            harness,
            ["event": "evt_3", "dispute": "dp_2", "revoke": true, "items": [["id": "li_2", "product": "vip"]]])
        #expect(revoked.status == 204)
        try await OutboxDrain.wait(harness.pool)
        let first = ClaimSupport.received(receiver, "transaction.disputed", about: "li_1")
        #expect(first.count == 1, "\(receiver.bodies("/hooks"))")
        let dispute = first.first?["dispute"] as? [String: Any]
        #expect(dispute?["id"] as? String == "dp_1" && dispute?["reason"] as? String == "fraudulent")
        #expect(dispute?["amount_milliunits"] as? Int == 4990)
        #expect(
            try await ClaimSupport.record(harness.client, store: "acme_web", "li_1").transaction["state"] as? String
                == "active")
        #expect(ClaimSupport.received(receiver, "transaction.disputed", about: "li_2").count == 1)
        #expect(
            try await ClaimSupport.record(harness.client, store: "acme_web", "li_2").transaction["state"] as? String
                == "revoked")
        await harness.service.shutdown()
    }
}
