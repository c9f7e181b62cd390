import AccountLink
import AlogameGateway
import Foundation
import HiveAxyl
import Postgres
import ReceiptCore
import ReceiptGate
import Steam
import SteamTestSupport
import TestSupport
import Testing

/// Steam through the running service, over HTTP and Postgres, against a fake of Steam's partner
/// Web API: a client made with `receiptgate client create` and the Steam flags, orders started
/// with `POST /v1/orders`, approved as the player would in the overlay, finished by `/v1/verify`,
/// and the transaction report read by a reconciliation run.
@Suite struct SteamEndToEnd {
    @Test func anOrderIsStartedApprovedFinalizedAndDeliveredOnce() async throws {
        let harness = try await SteamHarness.start()
        defer { harness.stop() }
        let mapped = try await Binary.run(
            [
                "products", "set", "--client", harness.client.clientID, "--store", "steam", "--product-id", "1001",
                "--entitlement", "gems",
            ], harness.cli)
        #expect(mapped.status == 0, "\(mapped.stderr)")
        let started = try await harness.startOrder(player: "player-1", items: [("1001", 2, 1_990)])
        #expect(started.status == 200, "\(started.text)")
        let answer = try started.json()
        let orderID = try #require(answer["order_id"] as? String)
        #expect(UInt64(orderID) != nil, "a 64-bit order id")
        let order = try #require(harness.steam.order(orderID))
        #expect(answer["store_transaction_id"] as? String == order.transID)
        #expect(answer["approval_url"] is NSNull, "a client session approves in the overlay")
        // Two of 1.99 USD: Steam's amount is the line's total in cents.
        #expect(harness.steam.calls("InitTxn").first?["amount[0]"] == "398")
        #expect(harness.steam.calls("InitTxn").first?["steamid"] == FakeSteam.steamID)
        // Started, not bought: nothing is on the ledger until it is finished.
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 0)
        #expect(try await harness.orderState(orderID) == "started")

        // Verified before the player approved: refused, and the order stays open.
        let early = try await harness.verify(orderID, player: "player-1")
        #expect(early.status == 422, "\(early.text)")
        #expect(SteamHarness.message(early).contains("ORDER_NOT_APPROVED"), "\(early.text)")
        #expect(try await harness.orderState(orderID) == "started")

        harness.steam.approve(orderID)
        let finalizesBefore = harness.steam.calls("FinalizeTxn").count
        let verified = try await harness.verify(orderID, player: "player-1")
        #expect(verified.status == 200, "\(verified.text)")
        let body = try verified.json()
        #expect(body["status"] as? String == "verified" && body["duplicate"] as? Bool == false, "\(body)")
        let transaction = body["transaction"] as? [String: Any] ?? [:]
        #expect(transaction["transaction_id"] as? String == "\(orderID)-1001")
        #expect(transaction["order_id"] as? String == orderID)
        #expect(transaction["product_id"] as? String == "1001")
        #expect(transaction["price_milliunits"] as? Int == 3_980)
        #expect(transaction["currency"] as? String == "USD")
        #expect(harness.steam.charges == 1)
        #expect(try await harness.orderState(orderID) == "finished")
        #expect(try await harness.events("transaction.verified") == 1)
        #expect(try await harness.events("entitlement.delivery") == 1)
        let owns = await eventually {
            (try? await harness.count(
                "SELECT count(*) AS n FROM player_entitlements WHERE player_id = 'player-1' AND entitlement = 'gems'"))
                == 1
        }
        #expect(owns, "the item's entitlement is the player's")

        // The same verification again: a duplicate, Steam asked where the order stands, never charged twice.
        let again = try await harness.verify(orderID, player: "player-1")
        #expect(again.status == 200, "\(again.text)")
        #expect(try again.json()["duplicate"] as? Bool == true)
        #expect(harness.steam.charges == 1)
        #expect(harness.steam.calls("FinalizeTxn").count == finalizesBefore + 1, "FinalizeTxn is sent once approved")
        #expect(try await harness.events("transaction.verified") == 1)
        #expect(try await harness.events("entitlement.delivery") == 1)

        // Another player's verification: the order's player keeps it, answered as the conflict.
        let other = try await harness.verify(orderID, player: "player-2")
        #expect(other.status == 200, "\(other.text)")
        let claimed = try other.json()["first_claimed_by"] as? [String: Any]
        #expect(claimed?["player_id"] as? String == "player-1", "\(other.text)")
        #expect(try await harness.player("\(orderID)-1001") == "player-1")
    }

    @Test func aFinalizeWhoseAnswerWasLostIsResumedWithoutASecondCharge() async throws {
        let harness = try await SteamHarness.start()
        defer { harness.stop() }
        let orderID = try #require(
            try await harness.startOrder(player: "player-3", items: [("1002", 1, 4_990)]).json()["order_id"] as? String)
        harness.steam.approve(orderID)
        harness.steam.state.loseNextFinalizeAnswer.set(true)
        let lost = try await harness.verify(orderID, player: "player-3")
        #expect(lost.status == 502, "\(lost.text)")
        #expect(harness.steam.charges == 1, "Steam charged; its answer never arrived")
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 0)
        let resumed = try await harness.verify(orderID, player: "player-3")
        #expect(resumed.status == 200, "\(resumed.text)")
        #expect(try resumed.json()["status"] as? String == "verified")
        #expect(try resumed.json()["duplicate"] as? Bool == false, "the first claim")
        #expect(harness.steam.charges == 1, "no second charge")
        #expect(harness.steam.calls("FinalizeTxn").count == 1, "asked with QueryTxn, not finalized again")
        #expect(try await harness.events("entitlement.delivery") == 1)
    }

    @Test func aDeclinedOrderIsRefusedAndCannotBeFinishedLater() async throws {
        let harness = try await SteamHarness.start()
        defer { harness.stop() }
        let orderID = try #require(
            try await harness.startOrder(player: "player-4", items: [("1003", 1, 990)]).json()["order_id"] as? String)
        harness.steam.decline(orderID)
        let declined = try await harness.verify(orderID, player: "player-4")
        #expect(declined.status == 422, "\(declined.text)")
        #expect(SteamHarness.message(declined).contains("ORDER_CLOSED"), "\(declined.text)")
        #expect(try await harness.orderState(orderID) == "closed")
        // Later: refused without asking Steam again.
        let asked = harness.steam.calls("QueryTxn").count + harness.steam.calls("FinalizeTxn").count
        let later = try await harness.verify(orderID, player: "player-4")
        #expect(later.status == 422 && SteamHarness.message(later).contains("ORDER_CLOSED"), "\(later.text)")
        #expect(harness.steam.calls("QueryTxn").count + harness.steam.calls("FinalizeTxn").count == asked)
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 0)
        #expect(harness.steam.charges == 0)
        // An id no order of this client has: refused, nothing asked.
        let unknown = try await harness.verify("123456789", player: "player-4")
        #expect(unknown.status == 422 && SteamHarness.message(unknown).contains("ORDER_NOT_FOUND"), "\(unknown.text)")
    }

    @Test func pricesThatDoNotConvertAreRefusedBeforeSteamIsAsked() async throws {
        let harness = try await SteamHarness.start()
        defer { harness.stop() }
        // Yen go to Steam in "sen", whole yen only: 120 yen is 12000; 120.5 yen does not convert, nor
        // 10.50 rupiah (1050 sen), nor a fraction of a cent.
        let yen = try await harness.startOrder(player: "p", items: [("1004", 1, 120_000)], currency: "JPY")
        #expect(yen.status == 200, "\(yen.text)")
        #expect(harness.steam.calls("InitTxn").last?["amount[0]"] == "12000")
        for (price, currency) in [(120_500, "JPY"), (1_995, "USD"), (10_500, "IDR")] {
            let refused = try await harness.startOrder(
                player: "p", items: [("1004", 1, Int64(price))], currency: currency)
            #expect(refused.status == 400, "\(currency) \(price): \(refused.text)")
        }
        let notAnItem = try await harness.startOrder(player: "p", items: [("gems", 1, 1_000)])
        #expect(notAnItem.status == 400, "\(notAnItem.text)")
        let web = try await harness.startOrder(player: "p", items: [("1004", 1, 1_000)], session: "web")
        #expect(web.status == 400, "a web session needs the player's address: \(web.text)")
        #expect(harness.steam.calls("InitTxn").count == 1, "only the order that converts reached Steam")
        let withAddress = try await harness.startOrder(
            player: "p", items: [("1004", 1, 1_000)], session: "web", ipAddress: "203.0.113.9")
        #expect(try withAddress.json()["approval_url"] as? String != nil, "\(withAddress.text)")
        // A store whose orders are not started here.
        let other = try await harness.client.post(
            "/v1/orders", json: ["store": "xsolla", "player_id": "p", "currency": "USD", "items": []], version: "2")
        #expect(other.status == 400, "\(other.text)")
    }

    @Test func aLineWithoutAPriceTakesTheCatalogsInThePlayersWalletCurrency() async throws {
        let harness = try await SteamHarness.start()
        defer { harness.stop() }
        let priced = try await Binary.run(
            [
                "products", "price", "--client", harness.client.clientID, "--store", "steam", "--product-id", "1001",
                "--currency", "EUR", "--price-milliunits", "4990", "--description", "500 gems",
            ], harness.cli)
        #expect(priced.status == 0, "\(priced.stderr)")
        harness.steam.state.walletCurrencies.set([FakeSteam.steamID: "EUR"])
        let body: [String: Any] = [
            "store": "steam", "player_id": "p", "steamid": FakeSteam.steamID,
            "items": [["product_id": "1001", "quantity": 2]],
        ]
        let started = try await harness.client.post("/v1/orders", json: body, version: "2")
        #expect(started.status == 200, "\(started.text)")
        let sent = try #require(harness.steam.calls("InitTxn").last)
        #expect(sent["currency"] == "EUR", "the player's wallet currency, from GetUserInfo")
        #expect(sent["amount[0]"] == "998", "two of the catalog's 4.99 EUR")
        #expect(sent["description[0]"] == "500 gems")
        // A product the catalog has no price of, in that currency: refused before InitTxn.
        let unpriced: [String: Any] = [
            "store": "steam", "player_id": "p", "steamid": FakeSteam.steamID, "currency": "USD",
            "items": [["product_id": "1001", "quantity": 1]],
        ]
        let refused = try await harness.client.post("/v1/orders", json: unpriced, version: "2")
        #expect(refused.status == 400 && SteamHarness.message(refused).contains("NO_CATALOG_PRICE"), "\(refused.text)")
        #expect(harness.steam.calls("InitTxn").count == 1)
    }

    /// An order is bought whole: its first verification records every line for the order's player,
    /// each once with its webhook; asking about another line afterwards is a duplicate of it.
    @Test func oneVerificationRecordsEveryLineOfAnOrder() async throws {
        let harness = try await SteamHarness.start()
        defer { harness.stop() }
        let orderID = try #require(
            try await harness.startOrder(player: "buyer", items: [("3001", 1, 990), ("3002", 2, 1_990)]).json()[
                "order_id"] as? String)
        harness.steam.approve(orderID)
        let first = try await harness.verify(orderID, player: "buyer")
        #expect(first.status == 200, "\(first.text)")
        #expect(try await harness.state("\(orderID)-3001") == "active")
        #expect(try await harness.state("\(orderID)-3002") == "active", "the second line was not recorded")
        #expect(try await harness.events("transaction.verified") == 2)
        let second = try await harness.verify(orderID, player: "buyer", product: "3002")
        #expect(second.status == 200, "\(second.text)")
        #expect(try second.json()["duplicate"] as? Bool == true, "\(second.text)")
        #expect(try await harness.events("transaction.verified") == 2)
        #expect(harness.steam.calls("FinalizeTxn").count == 1)
    }

    /// The game's two verifications of one approved order race (a retry sent before the first was
    /// answered): the order is recorded and delivered once, and neither answer claims it twice.
    @Test func twoVerificationsOfOneOrderAtOnceRecordItOnce() async throws {
        let harness = try await SteamHarness.start()
        defer { harness.stop() }
        let orderID = try #require(
            try await harness.startOrder(player: "racer", items: [("4001", 1, 990)]).json()["order_id"] as? String)
        harness.steam.approve(orderID)
        let client = harness.client
        let body: [String: any Sendable] = ["store": "steam", "receipt": orderID, "player_id": "racer"]
        async let first = client.post("/v1/verify", json: body, version: "2")
        async let second = client.post("/v1/verify", json: body, version: "2")
        let answers = try await [first, second]
        let verified = answers.filter { $0.status == 200 }
        #expect(!verified.isEmpty, "\(answers.map(\.text))")
        #expect(verified.filter { (try? $0.json()["duplicate"] as? Bool) == false }.count <= 1)
        // A refused one is the store's or a retryable answer, never the caller's mistake.
        #expect(answers.allSatisfy { $0.status == 200 || $0.status >= 500 }, "\(answers.map(\.text))")
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 1)
        #expect(try await harness.events("transaction.verified") == 1)
        let again = try await harness.verify(orderID, player: "racer")
        #expect(again.status == 200, "\(again.text)")
        #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")
    }

    @Test func refundsChargebacksAndFraudFromTheReportAreAppliedOnce() async throws {
        let harness = try await SteamHarness.start(reportPageSize: 2)
        defer { harness.stop() }
        // Four finished orders: one of two items, three of one.
        var orders: [String] = []
        for items in [
            [("2001", 1, Int64(990)), ("2002", 1, Int64(1_990))], [("2001", 1, 990)], [("2001", 1, 990)],
            [("2002", 1, 1_990)],
        ] {
            let orderID = try #require(
                try await harness.startOrder(player: "buyer", items: items).json()["order_id"] as? String)
            harness.steam.approve(orderID)
            for (item, _, _) in items {
                let verified = try await harness.verify(orderID, player: "buyer", product: item)
                #expect(verified.status == 200, "\(verified.text)")
            }
            orders.append(orderID)
        }
        #expect(try await harness.events("transaction.verified") == 5)
        harness.steam.move(orders[0], to: "PartialRefund", items: "Refunded", only: ["2002"])
        harness.steam.move(orders[1], to: "Chargedback")
        harness.steam.move(orders[2], to: "RefundedSuspectedFraud")
        harness.steam.move(orders[3], to: "Refunded")
        let report = try await harness.reconcile()
        #expect(!report.failed, "\(report)")
        // Pages of two: each page after the first starts with the order the last one ended on.
        let reads = harness.steam.calls("GetReport")
        #expect(reads.count >= 3, "\(reads)")
        #expect(Set(reads.compactMap { $0["time"] }).count >= 2, "each page asked from the last order's time")
        #expect(reads.allSatisfy { $0["maxresults"] == "2" && $0["type"] == "GAMESALES" })

        #expect(try await harness.state("\(orders[0])-2001") == "active", "only the refunded item of a partial refund")
        #expect(try await harness.state("\(orders[0])-2002") == "refunded")
        #expect(try await harness.state("\(orders[1])-2001") == "revoked")
        #expect(try await harness.reason("\(orders[1])-2001") == "Chargedback", "the chargeback's reason is kept")
        #expect(try await harness.state("\(orders[2])-2001") == "refunded")
        #expect(try await harness.reason("\(orders[2])-2001") == "RefundedSuspectedFraud")
        #expect(try await harness.state("\(orders[3])-2002") == "refunded")
        #expect(try await harness.events("transaction.refunded") == 3)
        #expect(try await harness.events("transaction.revoked") == 1)

        // Read again, and again after a restart of the service: each reversal was told once.
        _ = try await harness.reconcile()
        let restarted = try await harness.restart()
        defer { restarted.stop() }
        let again = try await restarted.reconcile()
        #expect(!again.failed, "\(again)")
        #expect(try await restarted.events("transaction.refunded") == 3)
        #expect(try await restarted.events("transaction.revoked") == 1)
        #expect(try await restarted.state("\(orders[0])-2001") == "active")
    }

    @Test func aSessionTicketProvesThePlayerAndABannedOneIsRefusedWhenTheClientSaysSo() async throws {
        let harness = try await SteamHarness.start(
            extraFlags: ["--steam-refuse-banned", "on", "--steam-require-ticket", "on"])
        defer { harness.stop() }
        // No ticket yet: the client starts orders only for a proven Steam ID.
        let unproven = try await harness.startOrder(player: "p", items: [("1001", 1, 990)])
        #expect(unproven.status == 403, "\(unproven.text)")
        #expect(harness.steam.calls("InitTxn").isEmpty)

        let good = try await harness.authenticate(harness.steam.issueTicket())
        #expect(good.status == 200, "\(good.text)")
        let proven = try good.json()
        #expect(proven["steamid"] as? String == FakeSteam.steamID)
        #expect(proven["owner_steamid"] as? String == FakeSteam.steamID)
        #expect(proven["vac_banned"] as? Bool == false && proven["publisher_banned"] as? Bool == false)
        let started = try await harness.startOrder(player: "p", items: [("1001", 1, 990)])
        #expect(started.status == 200, "now proven: \(started.text)")

        let banned = try await harness.authenticate(
            harness.steam.issueTicket(for: "76561197960287931", vacBanned: true))
        #expect(banned.status == 403, "\(banned.text)")
        #expect(SteamHarness.message(banned).contains("STEAM_ACCOUNT_BANNED"), "\(banned.text)")
        let bannedOrder = try await harness.startOrder(
            player: "q", items: [("1001", 1, 990)], steamID: "76561197960287931")
        #expect(bannedOrder.status == 403, "a refused ticket proves nothing: \(bannedOrder.text)")

        let forged = try await harness.authenticate("00AA")
        #expect(forged.status == 422, "\(forged.text)")
        #expect(SteamHarness.message(forged).contains("STEAM_TICKET_REFUSED"), "\(forged.text)")

        // Without the flag a banned owner is answered, for the game to decide.
        let open = try await SteamHarness.start()
        defer { open.stop() }
        let told = try await open.authenticate(open.steam.issueTicket(publisherBanned: true))
        #expect(told.status == 200, "\(told.text)")
        #expect(try told.json()["publisher_banned"] as? Bool == true)
    }

    @Test func anOperatorRefundIsAskedOfSteamAuditedAndAppliedWhenTheReportSaysSo() async throws {
        let harness = try await SteamHarness.start(adminToken: SteamHarness.adminToken)
        defer { harness.stop() }
        let orderID = try #require(
            try await harness.startOrder(player: "p", items: [("1001", 1, 990)]).json()["order_id"] as? String)
        harness.steam.approve(orderID)
        #expect(try await harness.verify(orderID, player: "p").status == 200)
        let asked = try await RawHTTP.request(
            port: harness.service.port, method: "POST", path: "/admin/transactions/steam/\(orderID)-1001/refund",
            headers: ["Authorization": "Bearer \(SteamHarness.adminToken)"])
        #expect(asked.status == 202, "\(asked.text)")
        #expect(harness.steam.calls("RefundTxn").first?["orderid"] == orderID)
        // The console lists the orders beside the purchases, and asks for a refund from a purchase's page.
        let second = try #require(
            try await harness.startOrder(player: "p", items: [("1002", 1, 990)]).json()["order_id"] as? String)
        harness.steam.approve(second)
        #expect(try await harness.verify(second, player: "p").status == 200)
        let console = ConsoleBrowserSession(port: harness.service.port)
        #expect(try await console.signIn(token: SteamHarness.adminToken).status == 303)
        let purchases = try await console.get("/console/purchases?store=steam")
        #expect(purchases.text.contains("id=\"orders\"") && purchases.text.contains(second), "\(purchases.text)")
        let page = try await console.get("/console/purchases/steam/\(second)-1002")
        #expect(page.text.contains("id=\"store-refund\""), "\(page.text)")
        let confirm = try await console.post("/console/purchases/steam/\(second)-1002/refund", [])
        #expect(confirm.status == 200 && harness.steam.calls("RefundTxn").count == 1, "confirmed first")
        let done = try await console.post(
            "/console/purchases/steam/\(second)-1002/refund", [("confirm", "yes")])
        #expect(done.status == 303, "\(done.text)")
        #expect(harness.steam.calls("RefundTxn").last?["orderid"] == second)
        // Asked, not yet done: the ledger moves when Steam's report says so.
        #expect(try await harness.state("\(orderID)-1001") == "active")
        #expect(try await harness.count("SELECT count(*) AS n FROM console_audit WHERE action = 'store-refund'") == 2)
        _ = try await harness.reconcile()
        #expect(try await harness.state("\(orderID)-1001") == "refunded")
        #expect(try await harness.state("\(second)-1002") == "refunded")
        #expect(try await harness.events("transaction.refunded") == 2)
        // Without the admin token: refused, nothing asked.
        let anonymous = try await RawHTTP.request(
            port: harness.service.port, method: "POST", path: "/admin/transactions/steam/\(orderID)-1001/refund")
        #expect(anonymous.status == 401, "\(anonymous.text)")
        #expect(harness.steam.calls("RefundTxn").count == 2)
    }

    @Test func hiveAxylFinishesASteamOrderByItsVendorCode() async throws {
        let harness = try await SteamHarness.start(extraFlags: ["--app-id", "com.example.steam.hive"])
        defer { harness.stop() }
        let orderID = try #require(
            try await harness.startOrder(player: "acc-1", items: [("1001", 1, 990)]).json()["order_id"] as? String)
        harness.steam.approve(orderID)
        let caller = HiveAxylCaller(
            port: harness.service.port, clientID: harness.client.clientID, secret: harness.client.secret)
        let token = try await caller.token()
        let body: [String: any Sendable] = [
            "providerId": "STEAM", "axylReceipt": orderID, "productId": "1001", "accountUuid": "acc-1",
            "playerId": "acc-1",
            "requestType": 1,
        ]
        let first = try await caller.verify(
            "/payment/v1/purchase/verify", body, token: token, appID: "com.example.steam.hive")
        #expect(first.hiveCode == 100, "\(first.text)")
        #expect(first.hiveData?["hiveAxylDuplicated"] as? Bool == false, "\(first.text)")
        #expect(harness.steam.charges == 1)
        #expect(try await harness.state("\(orderID)-1001") == "active")
    }

    @Test func thePublisherKeyIsInNoLogLineOrAnswer() async throws {
        let harness = try await SteamHarness.start()
        defer { harness.stop() }
        let orderID = try #require(
            try await harness.startOrder(player: "p", items: [("1001", 1, 990)]).json()["order_id"] as? String)
        harness.steam.approve(orderID)
        let verified = try await harness.verify(orderID, player: "p")
        #expect(!verified.text.contains(FakeSteam.publisherKey))
        _ = try await harness.reconcile()
        let shown = try await Binary.run(["client", "show", harness.client.clientID], harness.cli)
        #expect(shown.status == 0)
        #expect(
            !shown.stdout.contains(FakeSteam.publisherKey)
                && !harness.created.description.contains(FakeSteam.publisherKey))
        // Steam refusing a key (a rotated one) is reported, naming the flag to fix, without the key.
        let made = try await Binary.run(
            [
                "client", "create", "--name", "Another Steam game", "--steam-app-id", "481",
                "--steam-publisher-key", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF",
            ], harness.cli)
        #expect(made.status == 0, "\(made.stderr)")
        let refused = try await harness.reconcile()
        let shownReport = String(decoding: try JSONEncoder().encode(refused), as: UTF8.self)
        #expect(refused.failed && shownReport.contains("--steam-publisher-key"), "\(shownReport)")
        #expect(
            !shownReport.contains("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF") && !shownReport.contains(FakeSteam.publisherKey))
        #expect(!harness.log.captured.isEmpty)
        #expect(!harness.log.captured.contains { $0.contains(FakeSteam.publisherKey) })
        #expect(!harness.log.captured.contains { $0.contains("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF") })
    }
}

struct SteamHarness {
    let service: Service
    let pool: PostgresPool
    let steam: FakeSteam
    let client: SignedClient
    let cli: [String: String]
    /// What `client create` printed.
    let created: [String: Any]
    let log: ServerLogCapture
    let reportPageSize: Int

    static let adminToken = "steam-admin-token-0123456789abcdef0123456789"

    static func start(
        reportPageSize: Int = 1000, extraFlags: [String] = [], adminToken: String? = nil
    ) async throws -> SteamHarness {
        let steam = try FakeSteam()
        let cli = try await Binary.databaseEnvironment()
        let made = try await Binary.run(
            [
                "client", "create", "--name", "Steam game", "--game-id", "52", "--environments", "production",
                "--steam-app-id", FakeSteam.appID, "--steam-publisher-key", FakeSteam.publisherKey,
                "--webhook-url", "http://127.0.0.1:9/hooks", "--delivery-url", "http://127.0.0.1:9/deliver",
                "--allow-insecure-url",
            ] + extraFlags, cli)
        guard made.status == 0 else { throw RawHTTP.Failure(description: "client create failed: \(made.stderr)") }
        return try await launch(
            steam: steam, cli: cli, created: try Binary.json(made.stdout), reportPageSize: reportPageSize,
            adminToken: adminToken)
    }

    static func launch(
        steam: FakeSteam, cli: [String: String], created: [String: Any], reportPageSize: Int,
        adminToken: String? = nil
    ) async throws -> SteamHarness {
        var configuration = ServiceConfiguration()
        configuration.adminToken = adminToken
        configuration.port = 0
        configuration.databaseURL = cli["DATABASE_URL"]
        configuration.masterKey = Data(base64Encoded: cli["RECEIPTGATE_MASTER_KEY"] ?? "")
        configuration.dataDirectory = TestDatabase.temporaryDirectory("steam")
        configuration.outboundAllowPrivate = true
        let log = ServerLogCapture()
        let database = try Database.open(configuration, logger: log.logger)
        let provider = SteamProvider(
            configuration: steam.configuration(reportPageSize: reportPageSize), http: FakeSteam.http(),
            logger: log.logger)
        let service = try Service(
            configuration: configuration, logger: log.logger, database: database, stores: [provider.registration],
            dialects: [AlogameGateway(), HiveAxyl(), AccountLink()])
        service.outboxConfiguration = VerifyHarness.fastOutbox()
        try await service.start()
        let client = SignedClient(
            port: service.port, clientID: created["client_id"] as? String ?? "",
            secret: created["client_secret"] as? String ?? "")
        return SteamHarness(
            service: service, pool: database.pool, steam: steam, client: client, cli: cli, created: created, log: log,
            reportPageSize: reportPageSize)
    }

    func stop() {
        log.scan()
        let (service, steam) = (service, steam)
        Task.detached {
            await service.shutdown()
            await steam.shutdown()
        }
    }

    /// The service stopped and started again on the same database and fake.
    func restart() async throws -> SteamHarness {
        log.scan()
        await service.shutdown()
        return try await Self.launch(steam: steam, cli: cli, created: created, reportPageSize: reportPageSize)
    }

    func startOrder(
        player: String, items: [(String, Int, Int64)], currency: String = "USD", session: String? = nil,
        ipAddress: String? = nil, steamID: String = FakeSteam.steamID
    ) async throws -> RawHTTP.Response {
        var body: [String: Any] = [
            "store": "steam", "player_id": player, "steamid": steamID, "currency": currency,
            "language": "en",
            "items": items.map {
                ["product_id": $0.0, "quantity": $0.1, "price_milliunits": $0.2, "description": "Item \($0.0)"]
            },
        ]
        if let session { body["usersession"] = session }
        if let ipAddress { body["ip_address"] = ipAddress }
        return try await client.post("/v1/orders", json: body, version: "2")
    }

    func authenticate(_ ticket: String) async throws -> RawHTTP.Response {
        try await client.post("/v1/steam/authenticate", json: ["ticket": ticket], version: "2")
    }

    func verify(_ orderID: String, player: String, product: String? = nil) async throws -> RawHTTP.Response {
        var body: [String: Any] = ["store": "steam", "receipt": orderID, "player_id": player]
        if let product { body["product_id"] = product }
        return try await client.post("/v1/verify", json: body, version: "2")
    }

    func reconcile() async throws -> ReconciliationReport {
        try await service.reconcile(store: .steam, since: Date().addingTimeInterval(-86_400))
    }

    static func message(_ response: RawHTTP.Response) -> String {
        ((try? response.json())?["message"] as? String) ?? ""
    }

    func orderState(_ orderID: String) async throws -> String? {
        try await pool.query("SELECT state FROM orders WHERE store = 'steam' AND order_id = \(orderID)").first?.decode(
            "state", as: String.self)
    }

    func state(_ transactionID: String) async throws -> String? {
        try await pool.query(
            "SELECT state FROM transactions WHERE store = 'steam' AND transaction_id = \(transactionID)"
        ).first?.decode("state", as: String.self)
    }

    func reason(_ transactionID: String) async throws -> String? {
        try await pool.query(
            "SELECT revocation_reason FROM transactions WHERE store = 'steam' AND transaction_id = \(transactionID)"
        ).first?.decode("revocation_reason", as: String?.self)
    }

    func player(_ transactionID: String) async throws -> String? {
        try await pool.query(
            "SELECT player_id FROM transactions WHERE store = 'steam' AND transaction_id = \(transactionID)"
        ).first?.decode("player_id", as: String?.self)
    }

    func events(_ type: String) async throws -> Int {
        try await count("SELECT count(*) AS n FROM outbox WHERE event_type = \(type)")
    }

    func count(_ sql: PostgresQuery) async throws -> Int {
        try await pool.query(sql)[0].decode("n", as: Int.self)
    }
}
