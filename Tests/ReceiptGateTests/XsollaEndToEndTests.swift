import AccountLink
import AlogameGateway
import Foundation
import HiveAxyl
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing
import Xsolla
import XsollaTestSupport

/// Xsolla through the running service, over HTTP and Postgres, against a fake Xsolla: a client
/// made with `receiptgate client create` and the Xsolla flags, webhooks posted to its own route
/// signed as Xsolla signs them, the transactions report read by `/v1/verify` and by a
/// reconciliation run.
@Suite struct XsollaEndToEnd {
    @Test func aPaymentIsDeliveredToItsPlayerOnceHoweverOftenItIsTold() async throws {
        let harness = try await XsollaHarness.start()
        defer { harness.stop() }
        // `client create` printed the client's own webhook URL, to paste into Publisher Account.
        let routes = harness.created["notification_routes"] as? [String: String]
        #expect(routes?["xsolla"] == "/v1/notifications/xsolla/\(harness.client.clientID)", "\(harness.created)")
        // The report lists the sale under Xsolla's user id, and the game's as external_id.
        try harness.xsolla.list(
            FakeXsolla.record(transactionID: 600_001, player: "xsolla-user", externalPlayer: "player-42"),
            at: Date().addingTimeInterval(-600))
        let payment = try FakeXsolla.payment(transactionID: 600_001, player: "player-42", items: [("gems.100", 1)])
        let first = try await harness.notify(payment)
        #expect(first.status == 204, "\(first.text)")
        #expect(first.body.isEmpty, "Xsolla's success is an empty 204")
        #expect(
            harness.xsolla.queries.contains { $0["transaction_id"] == "600001" }, "read back from the report first")
        #expect(try await harness.state("600001/gems.100") == "active")
        #expect(try await harness.player("600001/gems.100") == "player-42", "claimed by the player the webhook names")
        let raw = try await harness.pool.query("SELECT raw_body FROM store_notifications")
        #expect(!raw.isEmpty)
        for row in raw {
            let body = String(decoding: try row.decode("raw_body", as: Data.self), as: UTF8.self)
            #expect(!body.contains("player@example.com") && !body.contains("18777976552"), "\(body)")
        }
        #expect(try await harness.events("transaction.verified") == 1)
        #expect(try await harness.events("entitlement.delivery") == 1)
        // The same webhook again (Xsolla retries), then the same payment found by reconciliation.
        let again = try await harness.notify(payment)
        #expect(again.status == 204, "\(again.text)")
        let report = try await harness.service.reconcile(store: .xsolla, since: Date().addingTimeInterval(-86_400))
        let shown = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(!report.failed, "\(shown)")
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions WHERE store = 'xsolla'") == 1)
        #expect(try await harness.events("transaction.verified") == 1, "applied once")
        #expect(try await harness.events("entitlement.delivery") == 1, "delivered once")
        #expect(try await harness.events("transaction.claim_conflict") == 0, "the same buyer, the same purchase")
        #expect(try await harness.player("600001/gems.100") == "player-42")
        // The API key and the webhook secret are never shown or logged.
        let shownClient = try await Binary.run(["client", "show", harness.client.clientID], harness.cli)
        #expect(shownClient.status == 0)
        #expect(
            !shownClient.stdout.contains(FakeXsolla.apiKey) && !shownClient.stdout.contains(FakeXsolla.webhookSecret))
        #expect(
            !harness.log.captured.contains { $0.contains(FakeXsolla.webhookSecret) || $0.contains(FakeXsolla.apiKey) })
    }

    @Test func aForgedSignatureIsRefusedAndNothingIsRecorded() async throws {
        let harness = try await XsollaHarness.start()
        defer { harness.stop() }
        let genuine = try FakeXsolla.payment(transactionID: 600_002, player: "player-1")
        for forged in [
            genuine.tampered(), genuine.with(authorization: nil),
            genuine.with(authorization: XsollaSignature.header(body: genuine.body, secret: "not the secret")),
        ] {
            let answer = try await harness.notify(forged)
            #expect(answer.status == 400, "\(answer.text)")
            #expect(XsollaHarness.errorCode(answer) == "INVALID_SIGNATURE", "\(answer.text)")
        }
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 0)
        #expect(try await harness.count("SELECT count(*) AS n FROM store_notifications") == 0)
        #expect(try await harness.count("SELECT count(*) AS n FROM outbox") == 0)
        // The schedule's own reconciliation reads by date; a forgery makes no call of its own.
        #expect(harness.xsolla.queries.allSatisfy { $0["transaction_id"] == nil }, "a forgery makes no outbound call")
        // A client id that names no client: 404, in Xsolla's error body.
        let unknown = try await RawHTTP.request(
            port: harness.service.port, method: "POST", path: "/v1/notifications/xsolla/rgc_nobody",
            headers: genuine.headers.merging(["Content-Type": "application/json"]) { $1 }, body: genuine.body)
        #expect(unknown.status == 404, "\(unknown.text)")
    }

    @Test func aWebShopOrderOfTwoSKUsIsTwoPurchasesForItsPlayer() async throws {
        let harness = try await XsollaHarness.start()
        defer { harness.stop() }
        // The product catalog maps Xsolla SKUs as it maps any store's products.
        let mapped = try await Binary.run(
            [
                "products", "set", "--client", harness.client.clientID, "--store", "xsolla", "--product-id", "sword",
                "--entitlement", "weapon",
            ], harness.cli)
        #expect(mapped.status == 0, "\(mapped.stderr)")
        let order = try FakeXsolla.order(
            orderID: 77, transactionID: 600_003, player: "player-7",
            items: [("sword", 1, "4.99"), ("shield", 2, "6.00")])
        try harness.xsolla.list(FakeXsolla.record(transactionID: 600_003, player: "player-7", items: []), at: Date())
        let answer = try await harness.notify(order)
        #expect(answer.status == 204, "\(answer.text)")
        #expect(try await harness.state("600003/sword") == "active")
        #expect(try await harness.state("600003/shield") == "active")
        #expect(try await harness.player("600003/shield") == "player-7")
        #expect(try await harness.events("entitlement.delivery") == 2)
        let owns = await eventually {
            (try? await harness.count(
                "SELECT count(*) AS n FROM player_entitlements WHERE player_id = 'player-7' AND entitlement = 'weapon'"))
                == 1
        }
        #expect(owns, "the SKU's entitlement is the player's")
        #expect(try await harness.notify(order).status == 204)
        #expect(try await harness.events("transaction.verified") == 2)
    }

    @Test func userValidationBothWays() async throws {
        let open = try await XsollaHarness.start()
        defer { open.stop() }
        let anyone = try await open.notify(try FakeXsolla.userValidation(player: "somebody"))
        #expect(anyone.status == 204, "\(anyone.text)")
        let strict = try await XsollaHarness.start(extraFlags: ["--xsolla-known-players-only", "on"])
        defer { strict.stop() }
        let stranger = try await strict.notify(try FakeXsolla.userValidation(player: "stranger"))
        #expect(stranger.status == 400, "\(stranger.text)")
        #expect(XsollaHarness.errorCode(stranger) == "INVALID_USER")
        // Once the player has bought something, ReceiptGate knows them.
        try strict.xsolla.list(FakeXsolla.record(transactionID: 600_004, player: "stranger"), at: Date())
        #expect(
            try await strict.notify(try FakeXsolla.payment(transactionID: 600_004, player: "stranger")).status == 204)
        let known = try await strict.notify(try FakeXsolla.userValidation(player: "stranger"))
        #expect(known.status == 204, "\(known.text)")
        #expect(
            try await strict.count(
                "SELECT count(*) AS n FROM store_notifications WHERE notification_type = 'user_validation'") == 0,
            "nothing is recorded for it")
    }

    @Test func aRefundRevokesThePurchaseAndTheGameIsTold() async throws {
        let harness = try await XsollaHarness.start()
        defer { harness.stop() }
        try harness.xsolla.list(FakeXsolla.record(transactionID: 600_005, player: "p"), at: Date())
        let payment = try FakeXsolla.payment(transactionID: 600_005, player: "p")
        #expect(try await harness.notify(payment).status == 204)
        let refund = try FakeXsolla.payment(transactionID: 600_005, player: "p", type: "refund", refundCode: 1)
        // Until the report lists the refund, Xsolla is asked to send it again (a 5xx).
        let early = try await harness.notify(refund)
        #expect(early.status == 500 && XsollaHarness.errorCode(early) == "SERVER_ERROR", "\(early.text)")
        #expect(try await harness.state("600005/gems.100") == "active")
        try harness.xsolla.relist(
            FakeXsolla.record(transactionID: 600_005, player: "p", status: "refunded"), at: Date())
        let answer = try await harness.notify(refund)
        #expect(answer.status == 204, "\(answer.text)")
        #expect(try await harness.state("600005/gems.100") == "refunded")
        #expect(try await harness.notify(refund).status == 204)
        #expect(try await harness.events("transaction.refunded") == 1)
        // The payment's webhook replayed after the refund grows nothing: the report says refunded.
        #expect(try await harness.notify(payment).status == 204)
        #expect(try await harness.state("600005/gems.100") == "refunded")
        #expect(try await harness.events("transaction.verified") == 1)
    }

    @Test func aPaymentWhosePlayerIdCannotBeHeldIsRecordedUnclaimed() async throws {
        let harness = try await XsollaHarness.start()
        defer { harness.stop() }
        let player = String(repeating: "p", count: 300)
        try harness.xsolla.list(FakeXsolla.record(transactionID: 600_009, player: player), at: Date())
        let answer = try await harness.notify(try FakeXsolla.payment(transactionID: 600_009, player: player))
        #expect(answer.status == 204, "Xsolla does not send a 400 again: \(answer.text)")
        // The webhook is on record; the purchase is nobody's until the operator assigns it.
        #expect(
            try await harness.count(
                "SELECT count(*) AS n FROM store_notifications WHERE notification_id LIKE '%payment:600009/gems.100'")
                == 1)
        #expect(try await harness.player("600009/gems.100") == nil)
        #expect(try await harness.events("transaction.verified") == 0)
    }

    @Test func aWebhookTheReportDoesNotListYetRecordsNothingAndIsSentAgain() async throws {
        let harness = try await XsollaHarness.start()
        defer { harness.stop() }
        let unknown = try await harness.notify(try FakeXsolla.payment(transactionID: 600_007, player: "p"))
        #expect(unknown.status == 500, "Xsolla sends it again: \(unknown.text)")
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 0)
        harness.xsolla.failFirst(Array(repeating: 500, count: 20))
        try harness.xsolla.list(FakeXsolla.record(transactionID: 600_008, player: "p"), at: Date())
        let unreadable = try await harness.notify(try FakeXsolla.payment(transactionID: 600_008, player: "p"))
        #expect(unreadable.status == 500, "\(unreadable.text)")
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 0)
    }

    @Test func aTransactionIdIsVerifiedFromTheReport() async throws {
        let harness = try await XsollaHarness.start()
        defer { harness.stop() }
        try harness.xsolla.list(FakeXsolla.record(transactionID: 600_006, player: "p"), at: Date())
        let verified = try await harness.client.post(
            "/v1/verify", json: ["store": "xsolla", "receipt": "600006", "player_id": "p"])
        #expect(verified.status == 200, "\(verified.text)")
        let transaction = try #require(try verified.json()["transaction"] as? [String: Any])
        #expect(transaction["transaction_id"] as? String == "600006/gems.100", "named as its webhook names it")
        #expect(transaction["product_id"] as? String == "gems.100")
        // The report names the buyer: another player presenting the id does not make it theirs.
        let other = try await harness.client.post(
            "/v1/verify", json: ["store": "xsolla", "receipt": "600006", "player_id": "someone-else"])
        #expect(other.status != 500, "\(other.text)")
        #expect(try await harness.player("600006/gems.100") == "p")
        let unknown = try await harness.client.post("/v1/verify", json: ["store": "xsolla", "receipt": "600999"])
        #expect(unknown.status == 422, "\(unknown.text)")
    }
}

/// A running service with the Xsolla provider pointed at a fake Xsolla, and one client made as an
/// operator makes it: `receiptgate client create` with the Xsolla flags.
struct XsollaHarness {
    let service: Service
    let pool: PostgresPool
    let xsolla: FakeXsolla
    let client: SignedClient
    let cli: [String: String]
    /// What `client create` printed.
    let created: [String: Any]
    let log: ServerLogCapture

    static func start(extraFlags: [String] = []) async throws -> XsollaHarness {
        let xsolla = try FakeXsolla()
        let cli = try await Binary.databaseEnvironment()
        let made = try await Binary.run(
            [
                "client", "create", "--name", "Xsolla game", "--game-id", "51", "--environments", "production,sandbox",
                "--xsolla-project-id", FakeXsolla.projectID, "--xsolla-merchant-id", FakeXsolla.merchantID,
                "--xsolla-api-key", FakeXsolla.apiKey, "--xsolla-webhook-secret", FakeXsolla.webhookSecret,
                "--webhook-url", "http://127.0.0.1:9/hooks", "--delivery-url", "http://127.0.0.1:9/deliver",
                "--allow-insecure-url",
            ] + extraFlags, cli)
        guard made.status == 0 else { throw RawHTTP.Failure(description: "client create failed: \(made.stderr)") }
        let created = try Binary.json(made.stdout)
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = cli["DATABASE_URL"]
        configuration.masterKey = Data(base64Encoded: cli["RECEIPTGATE_MASTER_KEY"] ?? "")
        configuration.dataDirectory = TestDatabase.temporaryDirectory("xsolla")
        configuration.outboundAllowPrivate = true
        let log = ServerLogCapture()
        let database = try Database.open(configuration, logger: log.logger)
        let provider = XsollaProvider(
            configuration: xsolla.configuration(), http: FakeXsolla.http(), logger: log.logger)
        let service = try Service(
            configuration: configuration, logger: log.logger, database: database, stores: [provider.registration],
            dialects: [AlogameGateway(), HiveAxyl(), AccountLink()])
        service.outboxConfiguration = VerifyHarness.fastOutbox()
        try await service.start()
        let client = SignedClient(
            port: service.port, clientID: created["client_id"] as? String ?? "",
            secret: created["client_secret"] as? String ?? "")
        return XsollaHarness(
            service: service, pool: database.pool, xsolla: xsolla, client: client, cli: cli, created: created, log: log)
    }

    func stop() {
        log.scan()
        let (service, xsolla) = (service, xsolla)
        Task.detached {
            await service.shutdown()
            await xsolla.shutdown()
        }
    }

    /// Posts a webhook to this client's route, as Xsolla does.
    func notify(_ webhook: FakeXsolla.Webhook) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: service.port, method: "POST", path: "/v1/notifications/xsolla/\(client.clientID)",
            headers: webhook.headers.merging(["Content-Type": "application/json"]) { $1 }, body: webhook.body)
    }

    static func errorCode(_ response: RawHTTP.Response) -> String? {
        ((try? response.json())?["error"] as? [String: Any])?["code"] as? String
    }

    func state(_ transactionID: String) async throws -> String? {
        try await pool.query(
            "SELECT state FROM transactions WHERE store = 'xsolla' AND transaction_id = \(transactionID)"
        ).first?.decode("state", as: String.self)
    }

    func player(_ transactionID: String) async throws -> String? {
        try await pool.query(
            "SELECT player_id FROM transactions WHERE store = 'xsolla' AND transaction_id = \(transactionID)"
        ).first?.decode("player_id", as: String?.self)
    }

    func events(_ type: String) async throws -> Int {
        try await count("SELECT count(*) AS n FROM outbox WHERE event_type = \(type)")
    }

    func count(_ sql: PostgresQuery) async throws -> Int {
        try await pool.query(sql)[0].decode("n", as: Int.self)
    }
}
