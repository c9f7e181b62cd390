package import Foundation
package import HTTPClient
package import HTTPServer
package import HuaweiAppGallery
package import OpenSSLCrypto
package import ReceiptCore
package import TestSupport

/// A local stand-in for Huawei on loopback: the OAuth token endpoint (client credentials grant,
/// checking the app id and secret) and the order and subscription services ReceiptGate calls
/// (checking the `APPAT` access token it issued, answering Huawei's JSON with `responseCode`s),
/// signing the purchase data with its own IAP key as Huawei does: RSASSA-PSS when the request
/// asks for it and the fake is set so, else PKCS#1 v1.5.
package final class FakeHuawei: Sendable {
    package static let appID = "107654321"
    package static let appSecret = "b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2"
    package static let package = "com.example.game.huawei"

    /// How the fake signs what it answers.
    package enum Signing: Sendable {
        /// `SHA256WithRSA/PSS`, named in the answer (when the request asked for it).
        case pss
        /// PKCS#1 v1.5 with no `signatureAlgorithm` in the answer, as Huawei answers by default.
        case pkcs1
        /// A signature by a key that is not the app's (a forger's).
        case forged
    }

    package final class State: Sendable {
        /// One-time purchases by token: the product id and the InAppPurchaseData JSON.
        package let products = LockedBox<[String: (productID: String, json: String)]>([:])
        /// Subscriptions by token: the subscription id and the InAppPurchaseData JSON.
        package let subscriptions = LockedBox<[String: (subscriptionID: String, json: String)]>([:])
        package let signing = LockedBox(Signing.pss)
        /// Off: the order service answers a token with another product's data (a Huawei that
        /// did not check), so only ReceiptGate's own check stands between.
        package let checksProduct = LockedBox(true)
        /// What was confirmed: "<productId> <purchaseToken>".
        package let confirmations = LockedBox<[String]>([])
        /// Tokens a later purchase of their product replaced: Huawei verifies only a product's
        /// latest token, and answers an older one `responseCode` 12 (no such record).
        package let superseded = LockedBox<Set<String>>([])
        /// Statuses to answer first, per route ("token", "verify", "subscription", "confirm").
        package let failuresFirst = LockedBox<[String: [Int]]>([:])
        package let hits = LockedBox<[String: Int]>([:])
        package let issuedTokens = LockedBox<Set<String>>([])
        package let tokenLifetime = LockedBox(3600)
        /// Every `HW-IAP-APPINFO` header received.
        package let appInfoHeaders = LockedBox<[String]>([])
        /// The cancelled or refunded purchases list, oldest first.
        package let cancelled = LockedBox<[CancelledRecord]>([])
        /// Records per page of the cancelled list at most (Huawei's is 1000; tests page sooner).
        package let cancelledPageSize = LockedBox(1000)
        /// Every cancelled-list request body, its values as text.
        package let cancelledQueries = LockedBox<[[String: String]]>([])
        /// The windows continuation tokens stand for: Huawei ignores the window once a token is sent.
        let continuations = LockedBox<[String: (startAt: Int64, endAt: Int64, type: Int, offset: Int)]>([:])
        /// How the cancelled list pages (a broken Huawei can be played).
        package let cancelledPaging = LockedBox(CancelledPaging.honest)
        /// Seconds of `Retry-After` on an injected 429 (none when nil).
        package let retryAfterSeconds = LockedBox<Int?>(nil)
        /// Order-service requests for tokens starting with this are held until `releaseHeld()`:
        /// a Huawei that takes the connection and does not answer yet.
        package let heldTokenPrefix = LockedBox<String?>(nil)
        /// The apps whose id and secret the token endpoint accepts (another tenant's app beside
        /// `appID`), by app id.
        package let apps = LockedBox<[String: String]>([FakeHuawei.appID: FakeHuawei.appSecret])
    }

    /// How the cancelled list hands out continuation tokens.
    package enum CancelledPaging: Sendable {
        /// A token while records remain, each page its own.
        case honest
        /// Every page, first included, names the same token, which leads to the first page again.
        case repeatsToken
        /// Every page names a new token, and every page after the first is empty.
        case emptyPagesWithTokens
    }

    /// A record of the cancelled list: when Huawei listed it, whether it is a subscription's, and
    /// the record as Huawei writes it.
    package struct CancelledRecord: Sendable {
        package let cancelledTime: Int64
        package let subscription: Bool
        package let json: String
    }

    package let state = State()
    package let key: PrivateKey
    package let server: HTTPServer

    package init() throws {
        key = try TestKeys.rsa(.huaweiIAP)
        let forger = try TestKeys.rsa(.unrelated)
        server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0), responder: Self.routes(state, key: key, forger: forger))
        try server.start()
    }

    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    package var oauthURL: String { "\(baseURL)/oauth2/v3/token" }

    /// The app's IAP public key as AppGallery Connect shows it: base64 DER SubjectPublicKeyInfo.
    package var publicKeyBase64: String {
        get throws { try key.publicKey.subjectPublicKeyInfo().base64EncodedString() }
    }

    /// The provider's configuration for this fake: every site at its address.
    package func configuration() -> HuaweiAppGalleryConfiguration {
        (try? HuaweiAppGalleryConfiguration.fromEnvironment([
            "RECEIPTGATE_HUAWEI_OAUTH_URL": oauthURL, "RECEIPTGATE_HUAWEI_ORDER_URL": baseURL,
        ]))
            ?? HuaweiAppGalleryConfiguration()
    }

    /// A client's settings and credentials for this fake's app.
    package func clientSettings() throws -> (settings: [String: [String]], credentials: [String: String]) {
        (
            [
                HuaweiAppGalleryProvider.Setting.appID: [Self.appID],
                HuaweiAppGalleryProvider.Setting.iapPublicKey: [try publicKeyBase64],
            ],
            [HuaweiAppGalleryProvider.Setting.appSecret: Self.appSecret]
        )
    }

    /// An HTTP client that retries quickly, as tests want.
    package static func http(retries: Int = 3) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.retry = .init(maxAttempts: retries, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        configuration.timeout = .seconds(60)
        return HTTPClient(configuration)
    }

    package func hits(_ route: String) -> Int { state.hits.get()[route] ?? 0 }
    package func failFirst(_ route: String, _ statuses: [Int]) { state.failuresFirst.update { $0[route] = statuses } }
    /// Another app (another tenant's) whose id and secret the token endpoint accepts. Its
    /// purchases are signed with the same IAP key: what tells tenants apart here is the app id.
    package func addApp(id: String, secret: String) { state.apps.update { $0[id] = secret } }
    /// Makes every access token issued so far invalid (Huawei revoked them).
    package func revokeIssuedTokens() { state.issuedTokens.set([]) }

    // MARK: - Purchases

    /// A one-time product: `kind` 0 consumable, 1 non-consumable; `state` 0 purchased, 1 canceled,
    /// 2 refunded; `sandbox` sets `purchaseType` 0.
    package func addProduct(
        token: String, productID: String = "gems100", orderID: String = "202405221405238a1b2c3d.107654321",
        kind: Int = 0, state: Int = 0, sandbox: Bool = false, package: String = FakeHuawei.package,
        price: Int64 = 499, purchaseTime: Int64 = 1_716_389_123_000, extra: [String: Any] = [:]
    ) throws {
        var object: [String: Any] = [
            "applicationId": Int64(Self.appID) ?? 0, "autoRenewing": false, "orderId": orderID, "kind": kind,
            "packageName": package,
            "productId": productID, "productName": "Gems", "purchaseTime": purchaseTime, "purchaseState": state,
            "developerPayload": "", "purchaseToken": token, "consumptionState": 0, "confirmed": 0, "currency": "EUR",
            "price": price,
            "country": "DE", "payOrderId": "Ae0f1fbd9929f803", "payType": "4", "accountFlag": 0,
        ]
        if sandbox { object["purchaseType"] = 0 }
        object.merge(extra) { $1 }
        let json = try Self.text(object)
        let confirmed = Set(self.state.confirmations.get())
        self.state.products.update { products in
            // The player bought the product again: its confirmed earlier tokens are history now.
            for (earlier, entry) in products
            where earlier != token && entry.productID == productID && confirmed.contains("\(productID) \(earlier)") {
                self.state.superseded.update { _ = $0.insert(earlier) }
            }
            products[token] = (productID, json)
        }
    }

    /// A subscription's latest receipt, as Huawei writes it: `orderID` is this receipt's order
    /// (Huawei makes a new one for every fee deduction), `lastOrderID` the previous deduction's
    /// (the same order on the first period), and the subscription id and token never change.
    package func addSubscription(
        token: String, subscriptionID: String = "1716389123000.sub.7", productID: String = "vip.monthly",
        orderID: String = "202405221405238a1b2c3d.sub.1", lastOrderID: String? = nil, periods: Int? = nil,
        expiry: Date = Date().addingTimeInterval(30 * 86_400), autoRenewing: Bool = true, sandbox: Bool = false,
        extra: [String: Any] = [:]
    ) throws {
        var object: [String: Any] = [
            "applicationId": Int64(Self.appID) ?? 0, "autoRenewing": autoRenewing, "orderId": orderID,
            "lastOrderId": lastOrderID ?? orderID,
            "kind": 2, "packageName": Self.package, "productId": productID, "purchaseTime": 1_716_389_123_000,
            "purchaseState": 0,
            "purchaseToken": token, "currency": "EUR", "price": 999, "country": "DE", "subscriptionId": subscriptionID,
            "productGroup": "vip", "oriPurchaseTime": 1_716_389_123_000, "quantity": 1,
            "numOfPeriods": periods ?? (lastOrderID == nil ? 1 : 2),
            "expirationDate": Int64(expiry.timeIntervalSince1970 * 1000), "subIsvalid": expiry > Date(),
            "renewStatus": autoRenewing ? 1 : 0,
        ]
        if sandbox { object["purchaseType"] = 0 }
        object.merge(extra) { $1 }
        let json = try Self.text(object)
        state.subscriptions.update { $0[token] = (subscriptionID, json) }
    }

    /// Huawei charging the subscription for its next period: a new receipt with a new `orderID`,
    /// the previous receipt's order as `lastOrderId`, one more period, the same subscription id
    /// and token. `extra` adds or replaces fields of the new receipt.
    package func renewSubscription(
        token: String, orderID: String, expiry: Date = Date().addingTimeInterval(30 * 86_400),
        extra: [String: Any] = [:]
    ) throws {
        guard let (subscriptionID, json) = state.subscriptions.get()[token],
            var object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        else {
            throw FakeMisuse(message: "no subscription with token \(token) to renew")
        }
        object["lastOrderId"] = object["orderId"]
        object["orderId"] = orderID
        object["numOfPeriods"] = ((object["numOfPeriods"] as? Int) ?? 1) + 1
        object["expirationDate"] = Int64(expiry.timeIntervalSince1970 * 1000)
        object["subIsvalid"] = expiry > Date()
        object.merge(extra) { $1 }
        let renewed = try Self.text(object)
        state.subscriptions.update { $0[token] = (subscriptionID, renewed) }
    }

    package struct FakeMisuse: Error, CustomStringConvertible {
        package let message: String
        package var description: String { message }
    }

    // MARK: - Notifications

    /// A v2 subscription notification, its status update signed as `signing` says.
    package func subscriptionNotification(
        _ status: [String: Any], signing: Signing = .pss, applicationID: String = FakeHuawei.appID
    ) throws -> Data {
        let text = try Self.text(status)
        let (signature, algorithm) = try Self.sign(
            text, signing: signing, askedForPSS: true, key: key, forger: try TestKeys.rsa(.unrelated))
        var sub: [String: Any] = [
            "version": "v2", "statusUpdateNotification": text, "notificationSignature": signature,
        ]
        if let algorithm { sub["signatureAlgorithm"] = algorithm }
        return try JSONSerialization.data(withJSONObject: [
            "version": "v2", "eventType": "SUBSCRIPTION", "notifyTime": 1_716_389_200_000,
            "applicationId": applicationID, "subNotification": sub,
        ])
    }

    /// A v2 order notification (unsigned, as Huawei sends it): 1 paid, 2 refunded.
    package static func orderNotification(
        type: Int, token: String, productID: String = "gems100",
        applicationID: String = FakeHuawei.appID
    ) throws -> Data {
        try JSONSerialization.data(withJSONObject: [
            "version": "v2", "eventType": "ORDER", "notifyTime": 1_716_389_200_000, "applicationId": applicationID,
            "orderNotification": [
                "version": "v2", "notificationType": type, "purchaseToken": token, "productId": productID,
            ],
        ])
    }

    package func shutdown() async { await server.shutdown() }

    static func text(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    /// The base64 signature of `text`'s bytes and the `signatureAlgorithm` to answer beside it.
    static func sign(
        _ text: String, signing: Signing, askedForPSS: Bool, key: PrivateKey, forger: PrivateKey
    ) throws -> (String, String?) {
        let bytes = Data(text.utf8)
        switch signing {
        case .pss where askedForPSS:
            return (try key.signPS256(bytes, saltLength: 32).base64EncodedString(), "SHA256WithRSA/PSS")
        case .pss, .pkcs1: return (try key.signRS256(bytes).base64EncodedString(), nil)
        case .forged: return (try forger.signPS256(bytes, saltLength: 32).base64EncodedString(), "SHA256WithRSA/PSS")
        }
    }
}
