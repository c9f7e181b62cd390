import Foundation
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

/// Notifications (v2): the signed status update checked with the owner's IAP key first, then the
/// purchase read again from Huawei; the ledger changes only as that answer shows.
@Suite struct HuaweiAppGalleryNotifications {
    static func request(_ huawei: FakeHuawei, body: Data) throws -> NotificationRequest {
        let owner = ClientWithStoreCredentials(
            client: try HuaweiAppGalleryVerify.client(huawei), credentials: try huawei.clientSettings().credentials)
        return NotificationRequest(
            body: body, owner: { package in package == FakeHuawei.package ? owner : nil },
            ownerBySetting: { name, value in
                name == HuaweiAppGalleryProvider.Setting.appID && value == FakeHuawei.appID ? owner : nil
            })
    }

    static let registered = RegisteredApps(appIdentifiers: [FakeHuawei.package], environments: [.production, .sandbox])

    static func rejection(_ body: () async throws -> Void) async -> NotificationRejection? {
        do { try await body(); return nil } catch let error as NotificationRejection { return error } catch {
            return nil
        }
    }

    @Test func aSignedRenewalIsReadBackAndApplied() async throws {
        let huawei = try FakeHuawei()
        try huawei.addSubscription(token: "tok.sub.n1", subscriptionID: "sub.n1", orderID: "order.n1")
        try huawei.renewSubscription(token: "tok.sub.n1", orderID: "order.n1.2")
        let body = try huawei.subscriptionNotification([
            "environment": "PROD", "notificationType": 2, "subscriptionId": "sub.n1",
            "purchaseToken": "tok.sub.n1", "orderId": "order.n1.2", "productId": "vip.monthly",
        ])
        let notification = try await HuaweiAppGalleryVerify.provider(huawei).receiveNotification(
            try Self.request(huawei, body: body),
            registered: Self.registered)
        #expect(notification.type == "RENEWAL")
        #expect(notification.event.kind == .renewed)
        #expect(notification.event.purchase?.transactionID == "order.n1.2")
        #expect(notification.event.purchase?.originalTransactionID == "sub.n1")
        #expect(huawei.hits("subscription") == 1)
        #expect(!String(decoding: notification.decodedJSON, as: UTF8.self).contains("tok.sub.n1"))
        await huawei.shutdown()
    }

    @Test func aForgedNotificationIsRefusedBeforeHuaweiIsAsked() async throws {
        let huawei = try FakeHuawei()
        try huawei.addSubscription(token: "tok.sub.n2", subscriptionID: "sub.n2")
        let body = try huawei.subscriptionNotification(
            ["notificationType": 1, "subscriptionId": "sub.n2", "purchaseToken": "tok.sub.n2"],
            signing: .forged)
        let rejected = await Self.rejection {
            _ = try await HuaweiAppGalleryVerify.provider(huawei).receiveNotification(
                try Self.request(huawei, body: body), registered: Self.registered)
        }
        #expect(rejected?.kind == .forged)
        #expect(rejected?.reason == "INVALID_SIGNATURE")
        #expect(huawei.hits("subscription") == 0 && huawei.hits("token") == 0)
        await huawei.shutdown()
    }

    /// A cancel the answer does not show yet changes nothing and is kept nowhere: answered for a
    /// retry, so Huawei sends it again and it is read again, applied once the answer shows it.
    @Test func aCancelTheAnswerDoesNotShowYetIsAskedForAgain() async throws {
        let huawei = try FakeHuawei()
        try huawei.addSubscription(token: "tok.sub.n3", subscriptionID: "sub.n3")  // active, not revoked
        let body = try huawei.subscriptionNotification(
            ["notificationType": 1, "subscriptionId": "sub.n3", "purchaseToken": "tok.sub.n3"],
            signing: .pkcs1)
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        let rejected = await Self.rejection {
            _ = try await provider.receiveNotification(
                try Self.request(huawei, body: body), registered: Self.registered)
        }
        #expect(
            rejected?.kind == .retryable && rejected?.reason == "CANCEL_NOT_SHOWN", "\(String(describing: rejected))")
        let canceledAt = Int64(Date().timeIntervalSince1970 * 1000) - 60_000
        try huawei.addSubscription(
            token: "tok.sub.n3", subscriptionID: "sub.n3", extra: ["purchaseState": 1, "cancelTime": canceledAt])
        let notification = try await provider.receiveNotification(
            try Self.request(huawei, body: body), registered: Self.registered)
        #expect(
            notification.type == "CANCEL" && notification.event.kind == .refunded,
            "\(notification.type) \(notification.event.kind)")
        #expect(huawei.hits("subscription") == 2)
        await huawei.shutdown()
    }

    @Test func anOrderRefundIsAppliedOnlyWhenHuaweiShowsIt() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.order.n1", orderID: "order.refund.n1", state: 2)
        try huawei.addProduct(token: "tok.order.n2", orderID: "order.kept.n2", state: 0)
        let provider = HuaweiAppGalleryVerify.provider(huawei)
        let refunded = try await provider.receiveNotification(
            try Self.request(huawei, body: FakeHuawei.orderNotification(type: 2, token: "tok.order.n1")),
            registered: Self.registered)
        #expect(refunded.type == "REFUND_SUCCESS" && refunded.event.kind == .refunded)
        #expect(refunded.event.purchase?.transactionID == "order.refund.n1")
        // A refund Huawei reads purchased: kept nowhere, answered for a retry.
        let claimed = await Self.rejection {
            _ = try await provider.receiveNotification(
                try Self.request(huawei, body: FakeHuawei.orderNotification(type: 2, token: "tok.order.n2")),
                registered: Self.registered)
        }
        #expect(claimed?.kind == .retryable && claimed?.reason == "REFUND_NOT_SHOWN", "\(String(describing: claimed))")
        await huawei.shutdown()
    }
}

/// Settings and environment variables: bad values stop start-up naming the variable.
@Suite struct HuaweiAppGalleryConfigurationChecks {
    @Test func badURLsNameTheirVariable() throws {
        for name in ["RECEIPTGATE_HUAWEI_OAUTH_URL", "RECEIPTGATE_HUAWEI_ORDER_URL"] {
            #expect { _ = try HuaweiAppGalleryConfiguration.fromEnvironment([name: "not a url"]) } throws: { error in
                (error as? ConfigurationInvalid)?.variable == name
            }
        }
        #expect(throws: Never.self) { _ = try HuaweiAppGalleryConfiguration.fromEnvironment([:]) }
    }

    @Test func theIAPKeyMustBeAnRSAKeyOf2048BitsOrMore() throws {
        let setting = try #require(
            HuaweiAppGalleryProvider.declaration.settings.first { $0.flag == "huawei-iap-public-key" })
        let good = try TestKeys.rsa(.huaweiIAP).publicKey.subjectPublicKeyInfo().base64EncodedString()
        #expect(try setting.check(good) == good)
        let short = try PrivateKey.generateRSA(bits: 1024).publicKey.subjectPublicKeyInfo().base64EncodedString()
        #expect(throws: SettingRejected.self) { _ = try setting.check(short) }
        let ec = try PrivateKey.generateP256().publicKey.subjectPublicKeyInfo().base64EncodedString()
        #expect(throws: SettingRejected.self) { _ = try setting.check(ec) }
        #expect(throws: SettingRejected.self) { _ = try setting.check("not base64!") }
        let secret = try #require(
            HuaweiAppGalleryProvider.declaration.settings.first { $0.flag == "huawei-app-secret" })
        #expect(secret.sealed && secret.key.hasPrefix(StoreID.huaweiAppGallery.rawValue + "."))
    }
}
