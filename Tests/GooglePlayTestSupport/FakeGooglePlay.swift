package import Foundation
package import GooglePlay
package import HTTPClient
package import HTTPServer
package import OpenSSLCrypto
package import TestSupport

/// A local stand-in for Google on loopback: the OAuth token endpoint (checking the service
/// account's RS256 assertion), the Android Publisher API paths ReceiptGate calls (checking the
/// bearer token it issued, answering Google's JSON and error bodies), and a JWKS for Pub/Sub's
/// OIDC push tokens, which it can also sign.
package final class FakeGooglePlay: Sendable {
    package static let clientEmail = "receiptgate@test-project.iam.gserviceaccount.com"
    package static let pushServiceAccount = "rtdn-push@test-project.iam.gserviceaccount.com"
    package static let pushAudience = "https://receiptgate.test/v1/notifications/google-play"
    package static let oidcKeyID = "fake-oidc-key-1"

    package final class State: Sendable {
        /// One-time purchases by token: the package they belong to and Google's `productsv2` JSON.
        package let products = LockedBox<[String: (package: String, productID: String, v2: String)]>([:])
        /// One-time products' catalog entries (`monetization.onetimeproducts.get`), by "package/product".
        package let oneTimeProducts = LockedBox<[String: String]>([:])
        /// Orders (`orders.batchGet`) by order id: the package and Google's JSON.
        package let orders = LockedBox<[String: (package: String, json: String)]>([:])
        /// Calls to paths Google deprecated or removed ("GET purchases/products", "POST subscriptions:revoke"...).
        package let deprecatedCalls = LockedBox<[String]>([])
        /// Every subscriptionsv2 revoke, cancel and defer taken: "revoke <token> <body>".
        package let subscriptionChanges = LockedBox<[String]>([])
        package let subscriptions = LockedBox<[String: (package: String, json: String)]>([:])
        /// Voided purchases by package (JSON objects and their void time, epoch ms), served
        /// `voidedPageSize` per page.
        package let voided = LockedBox<[String: [(json: String, voidedAt: Int64)]]>([:])
        package let voidedPageSize = LockedBox(1)
        /// What was acknowledged or consumed: "acknowledge products/gems100 <token>"...
        package let actions = LockedBox<[String]>([])
        /// Pending refund tokens Google issued, by token: the order each is for.
        package let pendingRefundTokens = LockedBox<[String: String]>([:])
        /// Every accepted orders.reviewrefund answer: its order, package and fields as text.
        package let refundReviews = LockedBox<[(orderID: String, package: String, body: [String: String])]>([])
        /// Statuses to answer first, per route name ("token", "products", "productsv2", "subscriptionsv2",
        /// "acknowledge", "voided", "jwks").
        package let failuresFirst = LockedBox<[String: [Int]]>([:])
        /// The `Retry-After` an injected 429 carries (seconds, or an HTTP date).
        package let retryAfter = LockedBox("0")
        package let hits = LockedBox<[String: Int]>([:])
        package let issuedTokens = LockedBox<Set<String>>([])
        /// Every JWT assertion the token endpoint received, verbatim.
        package let assertions = LockedBox<[String]>([])
        package let tokenDelay = LockedBox<Duration>(.zero)
        package let voidedQueries = LockedBox<[[String: String]]>([])
        package let jwksMaxAge = LockedBox(3600)
        /// External transactions Google holds, by "package/id".
        package let externalTransactions = LockedBox<[String: ExternalTransactionRecord]>([:])
        /// How many creates or refunds to take and then answer 503, as if the answer was lost.
        package let loseExternalTransactionAnswers = LockedBox(0)
        let accountKey: PublicKey
        let tokenURI: LockedBox<String>

        init(accountKey: PublicKey) {
            self.accountKey = accountKey
            tokenURI = LockedBox("")
        }
    }

    package let state: State
    package let accountKey: PrivateKey
    package let oidcKey: PrivateKey
    package let server: HTTPServer

    package init() throws {
        accountKey = try TestKeys.rsa(.googleServiceAccount)
        oidcKey = try TestKeys.rsa(.googleOIDC)
        state = State(accountKey: try accountKey.publicKey)
        let oidc = try oidcKey.rsaPublicComponents()
        server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0),
            responder: Self.routes(state, oidcModulus: oidc.modulus, oidcExponent: oidc.exponent))
        try server.start()
        state.tokenURI.set("\(baseURL)/token")
    }

    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    package var tokenURI: String { "\(baseURL)/token" }
    package var jwksURL: String { "\(baseURL)/oauth2/v3/certs" }

    /// The service-account key file Google Cloud would hand out, pointing at this fake.
    package func serviceAccountJSON(email: String = clientEmail, key: PrivateKey? = nil) throws -> String {
        let object: [String: String] = [
            "type": "service_account", "project_id": "test-project", "private_key_id": "0123456789abcdef",
            "private_key": try (key ?? accountKey).pemRepresentation(), "client_email": email,
            "client_id": "1234567890",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": tokenURI,
        ]
        return String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    package func serviceAccountKey() throws -> ServiceAccountKey {
        try ServiceAccountKey(json: Data(try serviceAccountJSON().utf8))
    }

    /// The provider's configuration for this fake (push authenticated by OIDC, poll off).
    package func configuration(pushToken: String? = nil) throws -> GooglePlayConfiguration {
        var configuration = GooglePlayConfiguration()
        configuration.serviceAccountKey = try serviceAccountKey()
        configuration.apiURL = baseURL
        configuration.jwksURL = jwksURL
        configuration.pushAudience = Self.pushAudience
        configuration.pushServiceAccount = Self.pushServiceAccount
        configuration.pushToken = pushToken
        configuration.voidedPurchasesInterval = nil
        return configuration
    }

    /// An HTTP client that retries quickly, as tests want.
    package static func http(retries: Int = 3) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.retry = .init(maxAttempts: retries, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        // Generous: every suite of the test process shares one small task pool with this fake's
        // handlers; a slow first answer on a loaded machine must not turn into a counted retry.
        configuration.timeout = .seconds(60)
        return HTTPClient(configuration)
    }

    package func hits(_ route: String) -> Int { state.hits.get()[route] ?? 0 }
    package func failFirst(_ route: String, _ statuses: [Int]) { state.failuresFirst.update { $0[route] = statuses } }
    /// Makes every bearer token issued so far invalid (Google revoked them).
    package func revokeIssuedTokens() { state.issuedTokens.set([]) }

    // MARK: - Purchases

    /// A one-time product as `purchases.productsv2` returns it: `state` 0 purchased, 1 canceled, 2
    /// pending (a pre-order before its release is pending); `test` for a license tester; `consumed`
    /// once the app consumed it; bought under `purchaseOption` (with `offer`), rented when `rent`,
    /// pre-ordered when `preorder`. Its order is added as processed.
    package func addProduct(
        token: String, package: String = "com.example.game", productID: String = "gems100",
        orderID: String? = "GPA.3301-2345-6789-01234",
        state: Int = 0, test: Bool = false, acknowledged: Bool = false, consumed: Bool = false,
        accountID: String? = nil,
        quantity: Int = 1, purchaseTimeMillis: Int64 = 1_716_389_123_000, purchaseOption: String? = nil,
        offer: String? = nil, rent: Bool = false, preorder: Bool = false
    ) throws {
        var details: [String: Any] = [
            "quantity": quantity, "refundableQuantity": quantity,
            "consumptionState": consumed ? "CONSUMPTION_STATE_CONSUMED" : "CONSUMPTION_STATE_YET_TO_BE_CONSUMED",
        ]
        if let purchaseOption { details["purchaseOptionId"] = purchaseOption }
        if let offer { details["offerId"] = offer }
        if rent { details["rentOfferDetails"] = [String: Any]() }
        if preorder { details["preorderOfferDetails"] = ["preorderReleaseTime": "2026-12-24T00:00:00Z"] }
        var v2: [String: Any] = [
            "kind": "androidpublisher#productPurchaseV2",
            "productLineItem": [["productId": productID, "productOfferDetails": details]],
            "purchaseStateContext": ["purchaseState": ["PURCHASED", "CANCELLED", "PENDING"][state]],
            "regionCode": "VN",
            "acknowledgementState": acknowledged
                ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING",
        ]
        // A pending purchase (an unreleased pre-order) has not completed.
        if state != 2 { v2["purchaseCompletionTime"] = Self.rfc3339(millis: purchaseTimeMillis) }
        if let orderID { v2["orderId"] = orderID }
        if test { v2["testPurchaseContext"] = ["fopType": "TEST"] }
        if let accountID { v2["obfuscatedExternalAccountId"] = accountID }
        let entry = (package: package, productID: productID, v2: try Self.text(v2))
        self.state.products.update { $0[token] = entry }
        if let orderID {
            try setOrder(orderID, package: package, token: token, state: state == 2 ? "PENDING" : "PROCESSED")
        }
    }

    /// Google fulfils a pre-order (or a pending payment completes): the purchase reads purchased,
    /// completed at `purchaseTimeMillis`.
    package func fulfil(token: String, purchaseTimeMillis: Int64) throws {
        guard let entry = state.products.get()[token],
            var object = try JSONSerialization.jsonObject(with: Data(entry.v2.utf8)) as? [String: Any]
        else { return }
        object["purchaseStateContext"] = ["purchaseState": "PURCHASED"]
        object["purchaseCompletionTime"] = Self.rfc3339(millis: purchaseTimeMillis)
        let fulfilled = (entry.package, entry.productID, try Self.text(object))
        state.products.update { $0[token] = fulfilled }
    }

    /// A one-time product in the catalog, with its purchase options: `rentals` maps a rent option's
    /// id to its rental period (ISO 8601), `buys` lists the buy options.
    package func addOneTimeProduct(
        package: String = "com.example.game", productID: String, rentals: [String: String] = [:], buys: [String] = []
    ) throws {
        let options: [[String: Any]] =
            buys.map { ["purchaseOptionId": $0, "state": "ACTIVE", "buyOption": ["legacyCompatible": true]] }
            + rentals.sorted { $0.key < $1.key }.map {
                ["purchaseOptionId": $0.key, "state": "ACTIVE", "rentOption": ["rentalPeriod": $0.value]]
            }
        let object: [String: Any] = [
            "packageName": package, "productId": productID, "purchaseOptions": options,
            "listings": [["languageCode": "en-US", "title": productID]],
        ]
        let json = try Self.text(object)
        state.oneTimeProducts.update { $0["\(package)/\(productID)"] = json }
    }

    /// An order as `orders.batchGet` returns it: `state` PENDING, PROCESSED, CANCELED,
    /// PENDING_REFUND, PARTIALLY_REFUNDED or REFUNDED; a refunded one carries its refund event at `at`.
    package func setOrder(
        _ orderID: String, package: String = "com.example.game", token: String, state orderState: String,
        at: Date = Date(timeIntervalSince1970: 1_716_389_123)
    ) throws {
        let time = Self.rfc3339(millis: Int64(at.timeIntervalSince1970 * 1000))
        var history: [String: Any] = ["processedEvent": ["eventTime": time]]
        switch orderState {
        case "REFUNDED": history["refundEvent"] = ["eventTime": time, "refundReason": "OTHER"]
        case "CANCELED": history["cancellationEvent"] = ["eventTime": time]
        case "PARTIALLY_REFUNDED": history["partialRefundEvents"] = [["eventTime": time]]
        default: break
        }
        let object: [String: Any] = [
            "orderId": orderID, "purchaseToken": token, "state": orderState, "createTime": time,
            "lastEventTime": time, "orderHistory": history,
            "lineItems": [["productId": "item", "productTitle": "item"]],
        ]
        let json = try Self.text(object)
        state.orders.update { $0[orderID] = (package, json) }
    }

    package func addSubscription(
        token: String, package: String = "com.example.game", productID: String = "vip.monthly",
        latestOrderID: String = "GPA.3399-1111-2222-33333", linkedToken: String? = nil,
        state: String = "SUBSCRIPTION_STATE_ACTIVE", expiry: Date = Date().addingTimeInterval(30 * 86_400),
        test: Bool = false, autoRenew: Bool = true, accountID: String? = nil
    ) throws {
        var object: [String: Any] = [
            "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "VN",
            "startTime": "2024-05-22T14:05:23.123Z",
            "subscriptionState": state, "etag": "etag-1",
            "acknowledgementState": "ACKNOWLEDGEMENT_STATE_PENDING",
            "lineItems": [
                [
                    "productId": productID,
                    "expiryTime": Self.rfc3339(millis: Int64(expiry.timeIntervalSince1970 * 1000)),
                    "autoRenewingPlan": ["autoRenewEnabled": autoRenew], "latestSuccessfulOrderId": latestOrderID,
                    "offerDetails": ["basePlanId": "monthly"],
                ]
            ],
        ]
        if let linkedToken { object["linkedPurchaseToken"] = linkedToken }
        if test { object["testPurchase"] = [String: Any]() }
        if let accountID { object["externalAccountIdentifiers"] = ["obfuscatedExternalAccountId": accountID] }
        let json = try Self.text(object)
        self.state.subscriptions.update { $0[token] = (package, json) }
        try setOrder(latestOrderID, package: package, token: token, state: "PROCESSED")
    }

    /// A void as `voidedpurchases.list` returns it; `refundType` 1 full, 2 quantity-based partial
    /// (`voidedQuantity` of the purchase's quantity refunded), nil when the void does not say.
    package func addVoided(
        package: String = "com.example.game", token: String, orderID: String, reason: Int = 1, source: Int = 0,
        refundType: Int? = 1, voidedQuantity: Int = 1, voidedAt: Date = Date()
    ) throws {
        let millis = Int64(voidedAt.timeIntervalSince1970 * 1000)
        var object: [String: Any] = [
            "kind": "androidpublisher#voidedPurchase", "purchaseToken": token, "purchaseTimeMillis": "1716389123000",
            "voidedTimeMillis": String(millis), "orderId": orderID, "voidedSource": source,
            "voidedReason": reason, "voidedQuantity": voidedQuantity,
        ]
        if let refundType { object["refundType"] = refundType }
        let json = try Self.text(object)
        state.voided.update { $0[package, default: []].append((json, millis)) }
    }

    // MARK: - Push tokens

    /// A Pub/Sub OIDC push token signed by the fake JWKS key.
    package func oidcToken(
        audience: String = pushAudience, email: String = pushServiceAccount, emailVerified: Bool = true,
        expiresIn: TimeInterval = 3600, issuer: String = "https://accounts.google.com", key: PrivateKey? = nil,
        keyID: String = oidcKeyID
    ) throws -> String {
        struct Claims: Encodable {
            let iss: String, aud: String, email: String, email_verified: Bool, sub: String, iat: Int64, exp: Int64
        }
        let now = Int64(Date().timeIntervalSince1970)
        return try CompactJWS.sign(
            claims: Claims(
                iss: issuer, aud: audience, email: email, email_verified: emailVerified, sub: "1234567890",
                iat: now, exp: now + Int64(expiresIn)),
            header: JWSHeader(kid: keyID, typ: "JWT"), key: key ?? oidcKey)
    }

    /// Pub/Sub's push body around a developer notification.
    package static func pushBody(_ notification: [String: Any], messageID: String) throws -> Data {
        let data = try JSONSerialization.data(withJSONObject: notification)
        return try JSONSerialization.data(withJSONObject: [
            "message": [
                "data": data.base64EncodedString(), "messageId": messageID, "message_id": messageID,
                "publishTime": "2024-05-22T14:05:23.123Z", "attributes": [String: String](),
            ],
            "subscription": "projects/test-project/subscriptions/play-rtdn",
        ])
    }

    package func shutdown() async { await server.shutdown() }

    static func text(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    static func rfc3339(millis: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
    }
}
