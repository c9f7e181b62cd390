import AppStoreTestSupport
import Foundation
import HiveAxyl
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// Hive Axyl's verify routes over HTTP on Postgres: what a purchase and a subscription answer,
/// and how store notifications the ledger receives later change that answer.
@Suite struct HiveAxylAgainstTheLedger {
    static let purchasePath = "/payment/v1/purchase/verify"
    static let subscriptionPath = "/payment/v1/subscription/verify"
    static let account = "7d3c6c1e-5b1a-4c2e-9f00-0a1b2c3d4e5f"

    @Test func aPurchaseThenItsRestoreThenARefundFromTheStore() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let token = try await caller.token()
        let id = "2000000000120001"
        let purchaseDate = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": id, "originalTransactionId": id, "appAccountToken": Self.account,
                "purchaseDate": purchaseDate,
            ]))

        let first = try await caller.verify(
            Self.purchasePath, HiveAxylCaller.purchase(receipt, account: Self.account.uppercased()), token: token)
        #expect(first.status == 200, "\(first.text)")
        #expect(first.hiveCode == 100)
        #expect(((try first.json())["result"] as? [String: Any])?["message"] as? String == "SUCCESS")
        let data = try #require(first.hiveData)
        #expect(data["hiveAxylPurchaseCancelState"] as? Int == 0)
        #expect(data["hiveAxylDuplicated"] as? Bool == false)
        #expect(data["hiveAxylAccountUuidCompare"] as? Int == 1)
        #expect(data["hiveAxylPurchaseTest"] as? String == "Y")
        #expect(data["hiveAxylProductId"] as? String == "gems.100")
        #expect(data["hiveAxylQuantity"] as? Int == 1)
        #expect(first.text.contains(#""hiveAxylPrice":0.99"#))
        #expect(data["hiveAxylCurrency"] as? String == "USD")
        #expect(data["hiveAxylStoreTransactionId"] as? String == id)
        #expect(data["hiveAxylOriginalStoreTransactionId"] as? String == id)
        #expect(data["hiveAxylPurchaseDate"] as? Int == Int(purchaseDate))

        let restore = try await caller.verify(
            Self.purchasePath, HiveAxylCaller.purchase(receipt, account: Self.account, requestType: 2), token: token)
        #expect(restore.hiveCode == 100)
        #expect(restore.hiveData?["hiveAxylDuplicated"] as? Bool == true)
        #expect(restore.hiveData?["hiveAxylPurchaseCancelState"] as? Int == 0)
        let mismatch = try await caller.verify(
            Self.purchasePath, HiveAxylCaller.purchase(receipt, account: "someone-else", requestType: 2), token: token)
        #expect(mismatch.hiveCode == 100, "no automatic block on a mismatch")
        #expect(mismatch.hiveData?["hiveAxylAccountUuidCompare"] as? Int == 2)

        // Apple refunds it: the ledger learns it from the notification, and the next answer says so.
        let refundedAt = Int64(Date().timeIntervalSince1970 * 1000)
        #expect(
            try await NotificationsDriveTheLedger.notify(
                harness, type: "REFUND",
                transaction: [
                    "transactionId": id, "originalTransactionId": id, "revocationDate": refundedAt,
                    "revocationReason": 0,
                ]
            ).status == 200)
        let afterRefund = try await caller.verify(
            Self.purchasePath, HiveAxylCaller.purchase(receipt, account: Self.account, requestType: 2), token: token)
        #expect(afterRefund.hiveCode == 100)
        #expect(afterRefund.hiveData?["hiveAxylPurchaseCancelState"] as? Int == 1)
        #expect(try await harness.count("transactions") == 1)
        await harness.service.shutdown()
    }

    @Test func accountCompareNineTheTestFlagAndRefusals() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let token = try await caller.token()
        let noAccount = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000121001"]))
        let nine = try await caller.verify(
            Self.purchasePath, HiveAxylCaller.purchase(noAccount, account: Self.account), token: token)
        #expect(nine.hiveData?["hiveAxylAccountUuidCompare"] as? Int == 9)
        let production = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000121002", "environment": "Production"]))
        #expect(
            try await caller.verify(Self.purchasePath, HiveAxylCaller.purchase(production), token: token).hiveData?[
                "hiveAxylPurchaseTest"] as? String == "N")

        // A forged receipt (another PKI), a wrong product, a subscription on the purchase route.
        let forged = try AppleTestPKI().sign(AppleTestPKI.transaction(["transactionId": "2000000000121003"]))
        let refusedForged = try await caller.verify(Self.purchasePath, HiveAxylCaller.purchase(forged), token: token)
        #expect(refusedForged.status == 422)
        #expect(refusedForged.hiveCode == 4220)
        #expect(try refusedForged.json()["data"] is NSNull)
        let other = try await caller.verify(
            Self.purchasePath, HiveAxylCaller.purchase(noAccount, product: "gems.500"), token: token)
        #expect(other.status == 422)
        #expect(other.hiveCode == 4221)
        let subscription = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000121004", "type": "Auto-Renewable Subscription",
                "expiresDate": Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000,
            ]))
        let wrongRoute = try await caller.verify(Self.purchasePath, HiveAxylCaller.purchase(subscription), token: token)
        #expect(wrongRoute.status == 400)
        #expect(wrongRoute.hiveCode == 4000)
        let consumableAsSubscription = try await caller.verify(
            Self.subscriptionPath, HiveAxylCaller.subscription(noAccount), token: token)
        #expect(consumableAsSubscription.status == 400)
        var google = HiveAxylCaller.purchase(noAccount)
        google["providerId"] = "GOOGLE"
        let noGoogle = try await caller.verify(Self.purchasePath, google, token: token)
        #expect(noGoogle.status == 400)
        #expect(noGoogle.text.contains("providerId GOOGLE"))
        #expect(try await harness.count("transactions") == 2, "refusals record nothing")

        // Another game presenting this game's purchase: 409.
        var rivalSettings = VerifyHarness.settings(name: "Rival", environments: [.sandbox, .production], gameID: 7)
        rivalSettings.settings[HiveAxyl.appIDsSetting] = ["rival.app"]
        let rival = try await harness.service.clients.create(rivalSettings)
        let rivalCaller = HiveAxylCaller(port: caller.port, clientID: rival.client.clientID, secret: rival.secret)
        let taken = try await rivalCaller.verify(
            Self.purchasePath, HiveAxylCaller.purchase(noAccount), token: try await rivalCaller.token(),
            appID: "rival.app")
        #expect(taken.status == 409)
        #expect(taken.hiveCode == 4090)

        // Sandbox no longer accepted for this client: 412.
        var productionOnly = ClientSettings()
        productionOnly.environments = [.production]
        _ = try await harness.service.clients.update(caller.clientID, productionOnly)
        let sandbox = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000121005"]))
        let notAccepted = try await caller.verify(Self.purchasePath, HiveAxylCaller.purchase(sandbox), token: token)
        #expect(notAccepted.status == 412)
        #expect(notAccepted.hiveCode == 4120)
        await harness.service.shutdown()
    }

    @Test func aSubscriptionRenewedThenRefundedByNotifications() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let token = try await caller.token()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let first: [String: any Sendable] = [
            "transactionId": "2000000000130001", "originalTransactionId": "2000000000130001",
            "type": "Auto-Renewable Subscription", "productId": "vip.monthly", "expiresDate": now + 60_000,
            "appAccountToken": Self.account,
        ]
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(first))

        let initial = try await caller.verify(
            Self.subscriptionPath, HiveAxylCaller.subscription(receipt, account: Self.account), token: token)
        #expect(initial.status == 200, "\(initial.text)")
        var data = try #require(initial.hiveData)
        #expect(data["hiveAxylStoreTransactionId"] as? String == "2000000000130001")
        #expect(data["hiveAxylOriginalStoreTransactionId"] as? String == "2000000000130001")
        #expect(data["hiveAxylExpiresDate"] as? Int == Int(now + 60_000))
        #expect(data["hiveAxylRefundDate"] is NSNull)
        #expect(data["hiveAxylDuplicated"] as? Bool == false)
        #expect(data["hiveAxylAccountUuidCompare"] as? Int == 1)
        #expect(data["hiveAxylProductId"] as? String == "vip.monthly")
        #expect(data["hiveAxylPurchaseTest"] as? String == "Y")
        #expect(data["hiveAxylSubscriptionState"] as? String == "active")

        // Renewed: the same (older) JWS now answers with the latest period the ledger knows.
        var renewed = first
        renewed["transactionId"] = "2000000000130002"
        renewed["expiresDate"] = now + 30 * 86_400_000
        #expect(
            try await NotificationsDriveTheLedger.notify(
                harness, type: "DID_RENEW", transaction: renewed,
                renewal: [
                    "environment": "Sandbox", "originalTransactionId": "2000000000130001", "autoRenewStatus": 1,
                    "signedDate": now,
                ]
            ).status == 200)
        let afterRenewal = try await caller.verify(
            Self.subscriptionPath, HiveAxylCaller.subscription(receipt, account: Self.account, requestType: 2),
            token: token)
        data = try #require(afterRenewal.hiveData)
        #expect(data["hiveAxylStoreTransactionId"] as? String == "2000000000130002", "the current period")
        #expect(data["hiveAxylOriginalStoreTransactionId"] as? String == "2000000000130001", "the first payment")
        #expect(data["hiveAxylExpiresDate"] as? Int == Int(now + 30 * 86_400_000))
        #expect(data["hiveAxylAutoRenew"] as? Bool == true)
        #expect(data["hiveAxylDuplicated"] as? Bool == true)
        #expect(data["hiveAxylRefundDate"] is NSNull)

        // Then Apple refunds the renewal.
        let refundedAt = now + 5_000
        #expect(
            try await NotificationsDriveTheLedger.notify(
                harness, type: "REFUND",
                transaction: renewed.merging(
                    [
                        "revocationDate": refundedAt, "revocationReason": 1,
                    ], uniquingKeysWith: { $1 })
            ).status == 200)
        let afterRefund = try await caller.verify(
            Self.subscriptionPath, HiveAxylCaller.subscription(receipt, account: Self.account, requestType: 2),
            token: token)
        data = try #require(afterRefund.hiveData)
        #expect(afterRefund.hiveCode == 100)
        #expect(data["hiveAxylRefundDate"] as? Int == Int(refundedAt))
        #expect(data["hiveAxylSubscriptionState"] as? String == "refunded")
        #expect(data["hiveAxylStoreTransactionId"] as? String == "2000000000130002")

        // Country and language are checked.
        var badCountry = HiveAxylCaller.subscription(receipt)
        badCountry["country"] = "XX"
        let refused = try await caller.verify(Self.subscriptionPath, badCountry, token: token)
        #expect(refused.status == 400)
        #expect(refused.text.contains("country"))
        await harness.service.shutdown()
    }
}
