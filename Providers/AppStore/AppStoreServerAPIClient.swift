package import Foundation
package import HTTPClient
package import OpenSSLCrypto
package import ReceiptCore

/// Apple's App Store Server API, authenticated with an ES256 JWT per request from the team's
/// `.p8` key. Keys and tokens are never logged or put in an error message.
package struct AppStoreServerAPIClient: Sendable {
    package struct Configuration: Sendable {
        package var keyID: String
        package var issuerID: String
        package var bundleID: String
        package var privateKey: PrivateKey
        package var productionBaseURL = "https://api.storekit.apple.com"
        package var sandboxBaseURL = "https://api.storekit-sandbox.apple.com"
        /// Lifetime of each request's token (Apple allows at most an hour).
        package var tokenLifetime: TimeInterval = 300

        package init(keyID: String, issuerID: String, bundleID: String, privateKey: PrivateKey) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.bundleID = bundleID
            self.privateKey = privateKey
        }

        /// Reads the `.p8` (PKCS#8 PEM) key from `path`.
        package init(keyID: String, issuerID: String, bundleID: String, privateKeyPath: String) throws {
            guard
                let pem = FileManager.default.contents(atPath: privateKeyPath).flatMap({
                    String(data: $0, encoding: .utf8)
                })
            else {
                throw CryptoError(.invalidKey, "cannot read the App Store Server API key at \(privateKeyPath)")
            }
            let key = try PrivateKey(pem: pem)
            guard key.isP256 else {
                throw CryptoError(.invalidKey, "the App Store Server API key must be a P-256 .p8 key")
            }
            self.init(keyID: keyID, issuerID: issuerID, bundleID: bundleID, privateKey: key)
        }
    }

    package let configuration: Configuration
    private let http: HTTPClient
    private let now: @Sendable () -> Date

    package init(configuration: Configuration, http: HTTPClient, now: @escaping @Sendable () -> Date = { Date() }) {
        self.configuration = configuration
        self.http = http
        self.now = now
    }

    // MARK: - Endpoints

    /// Get Transaction Info: the signed transaction for any transaction id.
    package func transactionInfo(
        _ transactionID: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> String {
        struct Body: Decodable { let signedTransactionInfo: String? }
        let body: Body = try await send(
            "GET", "/inApps/v1/transactions/\(try Self.pathSegment(transactionID))", environment: environment)
        guard let signed = body.signedTransactionInfo else {
            throw AppleAPIErrors.malformed("no signedTransactionInfo")
        }
        return signed
    }

    /// Get Transaction Info, trying production first and then sandbox when Apple says the
    /// transaction does not exist (4040010): evidence rarely says where it came from.
    package func transactionInfoInAnyEnvironment(
        _ transactionID: String, preferring first: AppStoreEnvironment = .production
    )
        async throws(StoreAPIError) -> (signedTransaction: String, environment: AppStoreEnvironment)
    {
        let second: AppStoreEnvironment = first == .production ? .sandbox : .production
        do {
            return (try await transactionInfo(transactionID, environment: first), first)
        } catch  where error.isTransactionNotFound {
            return (try await transactionInfo(transactionID, environment: second), second)
        }
    }

    /// Get Transaction History (v2), every page.
    package func transactionHistory(
        _ transactionID: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> [String] {
        try await allRevisions("/inApps/v2/history/\(try Self.pathSegment(transactionID))", environment: environment)
    }

    /// Follows Apple's `revision` / `hasMore` paging to the end and gathers `signedTransactions`.
    private func allRevisions(
        _ path: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> [String] {
        struct Page: Decodable { let revision: String?; let hasMore: Bool?; let signedTransactions: [String]? }
        var signed: [String] = [], revision: String?
        for _ in 0..<Self.maxPages {
            let query = revision.map { "?revision=\(Self.queryValue($0))" } ?? ""
            let page: Page = try await send("GET", path + query, environment: environment)
            signed += page.signedTransactions ?? []
            guard page.hasMore == true, let next = page.revision else { return signed }
            revision = next
        }
        throw AppleAPIErrors.malformed("\(path) did not end after \(Self.maxPages) pages")
    }

    /// Look Up Order ID: the transactions of a customer's order id (from their receipt e-mail).
    package func lookUpOrder(
        _ orderID: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> (valid: Bool, signedTransactions: [String]) {
        struct Body: Decodable { let status: Int?; let signedTransactions: [String]? }
        let body: Body = try await send(
            "GET", "/inApps/v1/lookup/\(try Self.pathSegment(orderID))", environment: environment)
        return (body.status == 0, body.signedTransactions ?? [])
    }

    package struct SubscriptionStatuses: Decodable, Sendable {
        package struct Group: Decodable, Sendable {
            package let subscriptionGroupIdentifier: String?
            package let lastTransactions: [LastTransaction]?
        }
        package struct LastTransaction: Decodable, Sendable {
            package let status: SubscriptionStatus?
            package let originalTransactionId: String?
            package let signedTransactionInfo: String?
            package let signedRenewalInfo: String?
        }
        package let environment: AppStoreEnvironment?
        package let bundleId: String?
        package let appAppleId: Int64?
        package let data: [Group]?
    }

    /// Get All Subscription Statuses.
    package func subscriptionStatuses(
        _ transactionID: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> SubscriptionStatuses {
        try await send(
            "GET", "/inApps/v1/subscriptions/\(try Self.pathSegment(transactionID))", environment: environment)
    }

    /// Get Refund History (v2), every page.
    package func refundHistory(
        _ transactionID: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> [String] {
        try await allRevisions(
            "/inApps/v2/refund/lookup/\(try Self.pathSegment(transactionID))", environment: environment)
    }

    package struct NotificationHistoryItem: Decodable, Sendable {
        package let signedPayload: String?
    }

    /// One page of Get Notification History (at most 20 records; Apple says `hasMore`).
    package struct NotificationHistoryPage: Decodable, Sendable {
        package let notificationHistory: [NotificationHistoryItem]?
        package let hasMore: Bool?
        package let paginationToken: String?
    }

    /// Get Notification History between two dates (every page).
    package func notificationHistory(
        from start: Date, to end: Date, transactionID: String? = nil, onlyFailures: Bool = false,
        environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> [NotificationHistoryItem] {
        var items: [NotificationHistoryItem] = [], token: String?
        for _ in 0..<Self.maxPages {
            let page = try await notificationHistoryPage(
                from: start, to: end, transactionID: transactionID, onlyFailures: onlyFailures,
                paginationToken: token, environment: environment)
            items += page.notificationHistory ?? []
            guard page.hasMore == true, let next = page.paginationToken else { return items }
            token = next
        }
        throw AppleAPIErrors.malformed("notification history did not end after \(Self.maxPages) pages")
    }

    /// One page of Get Notification History: `POST /inApps/v1/notifications/history`, the window
    /// in epoch milliseconds in the body, the page's token (from the previous page) in the query.
    package func notificationHistoryPage(
        from start: Date, to end: Date, transactionID: String? = nil, onlyFailures: Bool = false,
        paginationToken: String?, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> NotificationHistoryPage {
        struct Request: Encodable {
            let startDate: Int64; let endDate: Int64; let transactionId: String?; let onlyFailures: Bool?
        }
        let request = Request(
            startDate: Int64(start.timeIntervalSince1970 * 1000), endDate: Int64(end.timeIntervalSince1970 * 1000),
            transactionId: transactionID, onlyFailures: onlyFailures ? true : nil)
        guard let body = try? JSONEncoder().encode(request) else {
            throw AppleAPIErrors.malformed("cannot encode request")
        }
        let query = paginationToken.map { "?paginationToken=\(Self.queryValue($0))" } ?? ""
        return try await send("POST", "/inApps/v1/notifications/history\(query)", environment: environment, body: body)
    }

    /// Send Consumption Information (v2): `PUT /inApps/v2/transactions/consumption/{transactionId}`;
    /// Apple answers 202 with no body.
    package func sendConsumptionInformation(
        _ transactionID: String, body: Data, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) {
        let _: Empty = try await send(
            "PUT", "/inApps/v2/transactions/consumption/\(try Self.pathSegment(transactionID))",
            environment: environment,
            body: body, emptyAllowed: true)
    }

    /// Set App Account Token: `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`
    /// with `{"appAccountToken": "<uuid>"}`; Apple answers 200 with no body. Only an original
    /// transaction id is taken (4000187 otherwise), never a family-shared purchase (4000185).
    package func setAppAccountToken(
        _ originalTransactionID: String, appAccountToken: UUID,
        environment: AppStoreEnvironment
    ) async throws(StoreAPIError) {
        struct Request: Encodable { let appAccountToken: String }
        guard let body = try? JSONEncoder().encode(Request(appAccountToken: appAccountToken.uuidString.lowercased()))
        else {
            throw AppleAPIErrors.malformed("cannot encode request")
        }
        let _: Empty = try await send(
            "PUT", "/inApps/v1/transactions/\(try Self.pathSegment(originalTransactionID))/appAccountToken",
            environment: environment, body: body, emptyAllowed: true)
    }

    struct Empty: Decodable {}

    // MARK: - Transport

    static let maxPages = 1000

    private struct AppleError: Decodable { let errorCode: Int?; let errorMessage: String? }

    func send<T: Decodable>(
        _ method: String, _ path: String, environment: AppStoreEnvironment, body: Data? = nil,
        emptyAllowed: Bool = false
    ) async throws(StoreAPIError) -> T {
        let base = environment == .production ? configuration.productionBaseURL : configuration.sandboxBaseURL
        var headers: [(name: String, value: String)] = [
            ("Authorization", "Bearer \(try bearerToken())"), ("Accept", "application/json"),
        ]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        var request = HTTPClient.Request(method: method, url: base + path, headers: headers, body: body)
        request.retryable = true  // reads, and a PUT that replaces: retrying is safe
        let response: HTTPClient.Response
        do {
            response = try await http.send(request)
        } catch let error as HTTPClientError {
            throw AppleAPIErrors.unreachable(error.description)
        } catch {
            throw AppleAPIErrors.unreachable("\(error)")
        }
        guard HTTPStatus(response.status).isSuccess else {
            let apple = try? JSONDecoder().decode(AppleError.self, from: response.body)
            throw AppleAPIErrors.answered(
                HTTPStatus(response.status), errorCode: apple?.errorCode, errorMessage: apple?.errorMessage,
                retryAfter: response.askedToWait(now: now()))
        }
        do {
            return try JSONDecoder().decode(
                T.self, from: emptyAllowed && response.body.isEmpty ? Data("{}".utf8) : response.body)
        } catch {
            throw AppleAPIErrors.malformed("unexpected response body: \(error)")
        }
    }

    /// A fresh ES256 JWT: `kid` header; `iss`, `iat`, `exp`, `aud` = appstoreconnect-v1, `bid` claims.
    func bearerToken() throws(StoreAPIError) -> String {
        struct Claims: Encodable { let iss: String; let iat: Int64; let exp: Int64; let aud: String; let bid: String }
        let issuedAt = Int64(now().timeIntervalSince1970)
        let claims = Claims(
            iss: configuration.issuerID, iat: issuedAt, exp: issuedAt + Int64(configuration.tokenLifetime),
            aud: "appstoreconnect-v1", bid: configuration.bundleID)
        do {
            return try CompactJWS.sign(
                claims: claims, header: JWSHeader(kid: configuration.keyID, typ: "JWT"), key: configuration.privateKey)
        } catch {
            throw AppleAPIErrors.keyUnusable("cannot sign the API token")
        }
    }

    /// Ids go into the URL path: only the characters Apple's ids use are allowed.
    static func pathSegment(_ value: String) throws(StoreAPIError) -> String {
        guard !value.isEmpty, value.count <= 128,
            value.unicodeScalars.allSatisfy({
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_".unicodeScalars.contains($0))
            })
        else { throw AppleAPIErrors.refused("invalid identifier", status: .badRequest) }
        return value
    }

    static func queryValue(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
}
