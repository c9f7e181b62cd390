import Foundation
import GooglePlay
import GooglePlayTestSupport
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import ReceiptCore
import TestSupport
import Testing

/// Huawei AppGallery through the running service and every dialect, against a fake Huawei: the
/// native verify API, Hive Axyl (`providerId: HUAWEI`), `/iap` (a `huawei` object) and the
/// Alogame gateway (`os_id` 1, where the client's apps or the receipt tell the store), none of
/// which names Huawei. Verify, duplicate, refusals, refunds; the app secret never shown or logged.
@Suite struct HuaweiAppGalleryEndToEnd {
    @Test func theNativeAPIVerifiesOnceRefusesForgeriesAndConfirmsTheConsumable() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        try harness.huawei.addProduct(token: "tok.e2e.native", orderID: "order.e2e.native")
        let first = try await harness.verify("tok.e2e.native")
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["status"] as? String == "verified")
        let transaction = try #require(try first.json()["transaction"] as? [String: Any])
        #expect(transaction["store"] as? String == "huawei_appgallery")
        #expect(transaction["transaction_id"] as? String == "order.e2e.native")
        let again = try await harness.verify("tok.e2e.native")
        #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")
        #expect(
            try await harness.count("SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.verified'") == 1)
        // The consumable is confirmed with Huawei once, after its first claim.
        try await WebhookDelivery.waitUntil { harness.huawei.state.confirmations.get() == ["gems100 tok.e2e.native"] }

        // A bare token without its product id: Huawei cannot be asked; nothing is.
        let hits = harness.huawei.hits("verify")
        let noProduct = try await harness.verify("tok.e2e.native", product: nil)
        #expect(noProduct.status == 400, "\(noProduct.text)")
        #expect(harness.huawei.hits("verify") == hits)
        // Signed by another key, refunded, canceled: never verified, never recorded as active.
        harness.huawei.state.signing.set(.forged)
        try harness.huawei.addProduct(token: "tok.e2e.forged", orderID: "order.e2e.forged")
        #expect(try await harness.verify("tok.e2e.forged").status == 422)
        harness.huawei.state.signing.set(.pss)
        try harness.huawei.addProduct(token: "tok.e2e.refunded", orderID: "order.e2e.refunded", state: 2)
        let refunded = try await harness.verify("tok.e2e.refunded")
        #expect(refunded.status == 200, "\(refunded.text)")
        #expect(try refunded.json()["status"] as? String == "refunded", "\(refunded.text)")
        #expect(try await harness.state("order.e2e.refunded") == "refunded")
        try harness.huawei.addProduct(token: "tok.e2e.canceled", orderID: "order.e2e.canceled", state: 1)
        #expect(try await harness.verify("tok.e2e.canceled").status == 422)
        #expect(try await harness.state("order.e2e.forged") == nil)
        #expect(try await harness.state("order.e2e.canceled") == nil)
        // Shown once to the operator, never again, never logged.
        let shown = try await Binary.run(["client", "show", harness.client.clientID], harness.cli)
        #expect(shown.status == 0 && !shown.stdout.contains(FakeHuawei.appSecret))
        #expect(
            !harness.log.captured.contains { $0.contains(FakeHuawei.appSecret) }, "the app secret must never be logged")
    }

    @Test func aRefundHuaweiAnnouncesIsReadBackAndTheGameIsTold() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        try harness.huawei.addProduct(
            token: "tok.e2e.refund", productID: "no.ads", orderID: "order.e2e.refund", kind: 1)
        #expect(try await harness.verify("tok.e2e.refund", product: "no.ads").status == 200)
        // The notification alone changes nothing until Huawei's order service says so: 503, so
        // Huawei sends it again.
        let news = try FakeHuawei.orderNotification(type: 2, token: "tok.e2e.refund", productID: "no.ads")
        let unbacked = try await harness.notify(news)
        #expect(unbacked.status == 503, "\(unbacked.text)")
        #expect(try await harness.state("order.e2e.refund") == "active")
        try harness.huawei.addProduct(
            token: "tok.e2e.refund", productID: "no.ads", orderID: "order.e2e.refund", kind: 1, state: 2)
        // Sent again once Huawei shows the refund, it is applied at once; then once more.
        let told = try await harness.notify(news)
        #expect(told.status == 200, "\(told.text)")
        #expect(try told.json()["duplicate"] as? Bool == false, "\(told.text)")
        #expect(try await harness.state("order.e2e.refund") == "refunded")
        let toldAgain = try await harness.notify(news)
        #expect(toldAgain.status == 200, "\(toldAgain.text)")
        #expect(try toldAgain.json()["duplicate"] as? Bool == true, "\(toldAgain.text)")
        // Told twice, one refund: one event.
        try await WebhookDelivery.waitUntil {
            harness.receiver.received.get().contains { $0.body["type"] as? String == "transaction.refunded" }
        }
        #expect(
            try await harness.count("SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.refunded'") == 1)
    }

    /// A refund whose push was lost: Huawei's cancelled list finds it, the purchase is read
    /// again, and the ledger changes once however often the list shows it.
    @Test func aRefundOnlyTheCancelledListShowsIsFoundOnce() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        try harness.huawei.addProduct(token: "tok.e2e.lost", productID: "no.ads", orderID: "order.e2e.lost", kind: 1)
        #expect(try await harness.verify("tok.e2e.lost", product: "no.ads").status == 200)
        try harness.huawei.addProduct(
            token: "tok.e2e.lost", productID: "no.ads", orderID: "order.e2e.lost", kind: 1, state: 2)
        try harness.huawei.addCancelled(token: "tok.e2e.lost", productID: "no.ads", orderID: "order.e2e.lost")
        for _ in 0..<2 {
            let report = try await harness.service.reconcile(
                store: .huaweiAppGallery, since: Date().addingTimeInterval(-86_400))
            let shown = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
            #expect(!report.failed, "\(shown)")
        }
        #expect(try await harness.state("order.e2e.lost") == "refunded")
        try await WebhookDelivery.waitUntil {
            harness.receiver.received.get().contains { $0.body["type"] as? String == "transaction.refunded" }
        }
        #expect(
            try await harness.count("SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.refunded'") == 1)
    }

    /// Huawei charges a subscription again: the same token read again is a new receipt (its own
    /// order) of the same subscription, so the ledger keeps one subscription row, advanced.
    @Test func aRenewalVerifiedAgainAdvancesTheSameSubscription() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        let firstEnd = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 86_400).rounded())
        let secondEnd = firstEnd.addingTimeInterval(30 * 86_400)
        try harness.huawei.addSubscription(
            token: "tok.e2e.renew", subscriptionID: "sub.e2e.renew", orderID: "order.e2e.renew.1", expiry: firstEnd)
        let receipt =
            #"{"purchaseToken":"tok.e2e.renew","productId":"vip.monthly","subscriptionId":"sub.e2e.renew","kind":2,"packageName":"com.example.game.huawei"}"#
        let first = try await harness.verify(receipt, product: "vip.monthly")
        #expect(first.status == 200, "\(first.text)")
        try harness.huawei.renewSubscription(token: "tok.e2e.renew", orderID: "order.e2e.renew.2", expiry: secondEnd)
        let renewed = try await harness.verify(receipt, product: "vip.monthly")
        #expect(renewed.status == 200, "\(renewed.text)")
        #expect(try renewed.json()["duplicate"] as? Bool == false, "\(renewed.text)")
        let rows = try await harness.pool.query(
            "SELECT original_transaction_id, latest_transaction_id, expires_date FROM subscriptions WHERE store = 'huawei_appgallery'"
        )
        #expect(rows.count == 1, "a renewal is the same subscription, not a new one")
        #expect(try rows.first?.decode("original_transaction_id", as: String.self) == "sub.e2e.renew")
        #expect(try rows.first?.decode("latest_transaction_id", as: String.self) == "order.e2e.renew.2")
        #expect(try rows.first?.decode("expires_date", as: Date.self) == secondEnd)
        #expect(
            try await harness.count(
                "SELECT count(*) AS n FROM transactions WHERE store = 'huawei_appgallery' AND original_transaction_id = 'sub.e2e.renew'"
            ) == 2)
        // The same period sent again is a duplicate of its own receipt.
        #expect(try await harness.verify(receipt, product: "vip.monthly").json()["duplicate"] as? Bool == true)
    }

    /// A consumable the outbox confirmed and the player bought again: Huawei no longer reads its
    /// token, and its refund, found in the cancelled list, still reaches the ledger.
    @Test func aRefundOfAConsumableConfirmedAndBoughtAgainStillReachesTheLedger() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        try harness.huawei.addProduct(token: "tok.e2e.gems.1", orderID: "order.e2e.gems.1")
        #expect(try await harness.verify("tok.e2e.gems.1").status == 200)
        try await WebhookDelivery.waitUntil { harness.huawei.state.confirmations.get() == ["gems100 tok.e2e.gems.1"] }
        try harness.huawei.addProduct(token: "tok.e2e.gems.2", orderID: "order.e2e.gems.2")
        try harness.huawei.addCancelled(token: "tok.e2e.gems.1", orderID: "order.e2e.gems.1")
        let report = try await harness.service.reconcile(
            store: .huaweiAppGallery, since: Date().addingTimeInterval(-86_400))
        let shown = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(!report.failed, "\(shown)")
        #expect(try await harness.state("order.e2e.gems.1") == "refunded")
        try await WebhookDelivery.waitUntil {
            harness.receiver.received.get().contains { $0.body["type"] as? String == "transaction.refunded" }
        }
        #expect(
            try await harness.count("SELECT count(*) AS n FROM transactions WHERE store = 'huawei_appgallery'") == 1)
    }

    @Test func hiveAxylReachesHuaweiByItsVendorCode() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        try harness.huawei.addProduct(token: "tok.e2e.hive", productID: "gems.100", orderID: "order.e2e.hive")
        let caller = harness.hive()
        let token = try await caller.token()
        let path = "/payment/v1/purchase/verify", appID = HuaweiAppGalleryHarness.hiveAppID
        let body: [String: any Sendable] = [
            "providerId": "HUAWEI", "axylReceipt": "tok.e2e.hive", "productId": "gems.100", "accountUuid": "acc-1",
            "requestType": 1,
        ]
        let first = try await caller.verify(path, body, token: token, appID: appID)
        #expect(first.hiveCode == 100, "\(first.text)")
        #expect(first.hiveData?["hiveAxylDuplicated"] as? Bool == false, "\(first.text)")
        #expect(first.hiveData?["hiveAxylPurchaseCancelState"] as? Int == 0, "\(first.text)")
        #expect(first.hiveData?["hiveAxylStoreTransactionId"] as? String == "order.e2e.hive", "\(first.text)")
        // Verified before: answered again, marked a duplicate so the game server does not deliver twice.
        let again = try await caller.verify(path, body, token: token, appID: appID)
        #expect(again.hiveCode == 100, "a re-sent request is answered again: \(again.text)")
        #expect(again.hiveData?["hiveAxylDuplicated"] as? Bool == true, "\(again.text)")
        #expect(again.hiveData?["hiveAxylPurchaseCancelState"] as? Int == 0, "\(again.text)")
        #expect(
            try await harness.count("SELECT count(*) AS n FROM transactions WHERE store = 'huawei_appgallery'") == 1)
        // Refused by Huawei's signature check; a store not served is named as such.
        harness.huawei.state.signing.set(.forged)
        try harness.huawei.addProduct(
            token: "tok.e2e.hive.forged", productID: "gems.100", orderID: "order.e2e.hive.forged")
        var forged = body
        forged["axylReceipt"] = "tok.e2e.hive.forged"
        #expect(try await caller.verify(path, forged, token: token, appID: appID).hiveCode == 4220)
        var apple = body
        apple["providerId"] = "APPLE"
        let unserved = try await caller.verify(path, apple, token: token, appID: appID)
        #expect(unserved.status == 400 && unserved.text.contains("HUAWEI"), "\(unserved.text)")

        // A subscription: the subscription id in the dialect's camelCase, the order named.
        harness.huawei.state.signing.set(.pss)
        try harness.huawei.addSubscription(
            token: "tok.e2e.hive.sub", subscriptionID: "sub.e2e.hive", orderID: "order.e2e.sub")
        let subscription: [String: any Sendable] = [
            "providerId": "HUAWEI", "axylReceipt": "tok.e2e.hive.sub", "huaweiSubscriptionId": "sub.e2e.hive",
            "storeTransactionId": "order.e2e.sub", "accountUuid": "acc-1", "country": "DE",
            "language": "de", "requestType": 1,
        ]
        let subscribed = try await caller.verify(
            "/payment/v1/subscription/verify", subscription, token: token, appID: appID)
        #expect(subscribed.hiveCode == 100, "\(subscribed.text)")
        var unnamed = subscription
        unnamed["storeTransactionId"] = nil
        #expect(
            try await caller.verify("/payment/v1/subscription/verify", unnamed, token: token, appID: appID).status
                == 400)
    }

    /// Refunds through Hive Axyl: a token Huawei already reads refunded, and a purchase verified
    /// then refunded (found in Huawei's cancelled list) and asked about again, both answer
    /// `hiveAxylPurchaseCancelState: 1`, the seed's "stop product delivery".
    @Test func hiveAxylReportsAHuaweiRefundAsCanceled() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        let caller = harness.hive()
        let token = try await caller.token()
        let path = "/payment/v1/purchase/verify", appID = HuaweiAppGalleryHarness.hiveAppID
        func body(_ receipt: String, requestType: Int = 1) -> [String: any Sendable] {
            [
                "providerId": "HUAWEI", "axylReceipt": receipt, "productId": "gems.100", "accountUuid": "acc-1",
                "requestType": requestType,
            ]
        }
        try harness.huawei.addProduct(
            token: "tok.e2e.hive.refunded", productID: "gems.100", orderID: "order.e2e.hive.refunded", state: 2)
        let refunded = try await caller.verify(path, body("tok.e2e.hive.refunded"), token: token, appID: appID)
        #expect(refunded.hiveCode == 100, "\(refunded.text)")
        #expect(refunded.hiveData?["hiveAxylPurchaseCancelState"] as? Int == 1, "\(refunded.text)")
        #expect(try await harness.state("order.e2e.hive.refunded") == "refunded")

        try harness.huawei.addProduct(
            token: "tok.e2e.hive.later", productID: "gems.100", orderID: "order.e2e.hive.later", kind: 1)
        let bought = try await caller.verify(path, body("tok.e2e.hive.later"), token: token, appID: appID)
        #expect(bought.hiveData?["hiveAxylPurchaseCancelState"] as? Int == 0, "\(bought.text)")
        try harness.huawei.addProduct(
            token: "tok.e2e.hive.later", productID: "gems.100", orderID: "order.e2e.hive.later", kind: 1, state: 2)
        try harness.huawei.addCancelled(
            token: "tok.e2e.hive.later", productID: "gems.100", orderID: "order.e2e.hive.later")
        let report = try await harness.service.reconcile(
            store: .huaweiAppGallery, since: Date().addingTimeInterval(-86_400))
        let shown = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(!report.failed, "\(shown)")
        #expect(try await harness.state("order.e2e.hive.later") == "refunded")
        let restored = try await caller.verify(
            path, body("tok.e2e.hive.later", requestType: 2), token: token, appID: appID)
        #expect(restored.hiveCode == 100, "\(restored.text)")
        #expect(restored.hiveData?["hiveAxylPurchaseCancelState"] as? Int == 1, "\(restored.text)")
        #expect(restored.hiveData?["hiveAxylDuplicated"] as? Bool == true, "\(restored.text)")
    }

    @Test func theAccountLinkFlowTakesAHuaweiObject() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        try harness.huawei.addProduct(token: "tok.e2e.iap", productID: "no.ads", orderID: "order.e2e.iap", kind: 1)
        func iap(_ huawei: [String: Any]) async throws -> RawHTTP.Response {
            var headers = AccountLinkEndToEnd.headers
            headers["X-Client-OS"] = "android"
            return try await RawHTTP.request(
                port: harness.service.port, method: "POST", path: "/iap", headers: headers,
                body: try JSONSerialization.data(withJSONObject: ["huawei": huawei]))
        }
        let created = try await iap([
            "package_id": FakeHuawei.package, "purchase_token": "tok.e2e.iap", "product_id": "no.ads",
        ])
        #expect(created.status == 200, "\(created.text)")
        #expect(try created.json()["auto_account_created"] as? Bool == true)
        let links = try await harness.pool.query("SELECT store, original_transaction_id FROM account_links")
        #expect(try links.map { try $0.decode("store", as: String.self) } == ["huawei_appgallery"])
        #expect(try links.first?.decode("original_transaction_id", as: String.self) == "order.e2e.iap")
        // The same purchase again signs in to the account it is linked to: no second account.
        let again = try await iap([
            "package_id": FakeHuawei.package, "purchase_token": "tok.e2e.iap", "product_id": "no.ads",
        ])
        #expect(again.status == 200, "\(again.text)")
        #expect(try again.json()["auto_account_created"] as? Bool == false, "\(again.text)")
        #expect(try again.json()["account_switched"] as? Bool == false, "\(again.text)")
        func subject(_ answer: RawHTTP.Response) async throws -> String? {
            let token = try #require(try answer.json()["access_token"] as? String)
            return try await AccountLinkEndToEnd.userinfo(harness.service.port, token).json()["sub"] as? String
        }
        let account = try await subject(created), sameAccount = try await subject(again)
        #expect(account != nil && sameAccount == account)
        #expect(try await harness.count("SELECT count(*) AS n FROM account_links") == 1)
        // Huawei reads it refunded: refused as the other stores' refunds are, nothing linked.
        try harness.huawei.addProduct(
            token: "tok.e2e.iap.refunded", productID: "no.ads", orderID: "order.e2e.iap.refunded", kind: 1, state: 2)
        let refunded = try await iap([
            "package_id": FakeHuawei.package, "purchase_token": "tok.e2e.iap.refunded", "product_id": "no.ads",
        ])
        #expect(refunded.status == 422, "\(refunded.text)")
        #expect(try refunded.json()["error"] as? String == "PURCHASE_REFUNDED", "\(refunded.text)")
        #expect(try await harness.count("SELECT count(*) AS n FROM account_links") == 1)
        // Another package, an unknown token, a wrong type: refused, nothing created.
        #expect(
            try await iap(["package_id": "com.other.game", "purchase_token": "tok.e2e.iap", "product_id": "no.ads"])
                .status == 404)
        #expect(
            try await iap([
                "package_id": FakeHuawei.package, "purchase_token": "tok.e2e.nobody", "product_id": "no.ads",
            ]).status == 422)
        let wrongType = try await iap(["package_id": FakeHuawei.package, "purchase_token": 7])
        #expect(wrongType.status == 400 && wrongType.text.contains("huawei.purchase_token"), "\(wrongType.text)")
        #expect(try await harness.count("SELECT count(*) AS n FROM accounts") == 1)
    }

    /// Served beside Google Play: `os_id` 1 is either. A client with only Huawei apps means
    /// Huawei; one with apps in both is told apart by a receipt only Huawei's SDK makes, and a
    /// bare token is refused as ambiguous, naming both.
    @Test func theAlogameGatewayChoosesTheAndroidStoreByTheClientsAppsThenTheReceipt() async throws {
        let google = try FakeGooglePlay()
        var googleConfiguration = try google.configuration()
        googleConfiguration.serviceAccountKey = nil
        let play = GooglePlayProvider(
            configuration: googleConfiguration, http: FakeGooglePlay.http(), logger: Logger(minimumLevel: .error))
        let harness = try await HuaweiAppGalleryHarness.start(stores: [play.registration])
        defer { harness.stop() }
        try harness.huawei.addProduct(token: "tok.e2e.alo", orderID: "order.e2e.alo")
        let body: [String: Any] = ["receipt": "tok.e2e.alo", "product_id": "gems100", "os_id": 1]
        let first = try await harness.client.post("/iap/gateway/verify", json: body)
        #expect(first.status == 200, "\(first.text)")
        #expect((try first.json()["receipt_info"] as? [String: Any])?["platform"] as? String == "android")
        #expect(try await harness.client.post("/iap/gateway/verify", json: body).status == 409)
        try harness.huawei.addProduct(token: "tok.e2e.alo.refunded", orderID: "order.e2e.alo.refunded", state: 2)
        let refunded = try await harness.client.post(
            "/iap/gateway/verify", json: ["receipt": "tok.e2e.alo.refunded", "product_id": "gems100", "os_id": 1])
        #expect(refunded.status == 422, "\(refunded.text)")

        // The same game's second client has apps in both stores.
        let both = try await Binary.run(
            [
                "client", "create", "--name", "Both", "--game-id", "43", "--environments", "production,sandbox",
                "--huawei-package-name", FakeHuawei.package, "--huawei-app-id", FakeHuawei.appID,
                "--huawei-app-secret", FakeHuawei.appSecret, "--huawei-iap-public-key",
                try harness.huawei.publicKeyBase64,
                "--package-name", "com.example.game.play",
            ], harness.cli)
        #expect(both.status == 0, "\(both.stderr)")
        let made = try Binary.json(both.stdout)
        let caller = SignedClient(
            port: harness.service.port, clientID: made["client_id"] as? String ?? "",
            secret: made["client_secret"] as? String ?? "")
        try harness.huawei.addProduct(token: "tok.e2e.both", orderID: "order.e2e.both")
        let ambiguous = try await caller.post(
            "/iap/gateway/verify", json: ["receipt": "tok.e2e.both", "product_id": "gems100", "os_id": 1])
        #expect(ambiguous.status == 400, "\(ambiguous.text)")
        #expect(try ambiguous.json()["error"] as? String == "INVALID_OS_ID")
        #expect(
            ambiguous.text.contains("Google Play") && ambiguous.text.contains("Huawei AppGallery"), "\(ambiguous.text)")
        let data = try String(
            decoding: JSONSerialization.data(withJSONObject: [
                "purchaseToken": "tok.e2e.both", "productId": "gems100",
                "packageName": FakeHuawei.package, "accountFlag": 0,
            ]), as: UTF8.self)
        let wrapped = try String(
            decoding: JSONSerialization.data(withJSONObject: ["inAppPurchaseData": data, "inAppDataSignature": "c2ln"]),
            as: UTF8.self)
        let recognized = try await caller.post(
            "/iap/gateway/verify", json: ["receipt": wrapped, "product_id": "gems100", "os_id": 1])
        #expect(recognized.status == 200, "\(recognized.text)")
        #expect(
            try await harness.pool.query("SELECT store FROM transactions WHERE transaction_id = 'order.e2e.both'")
                .first?.decode("store", as: String.self)
                == "huawei_appgallery")
        await google.shutdown()
    }
}
