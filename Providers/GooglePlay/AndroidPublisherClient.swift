package import Foundation
package import HTTPClient
import ReceiptCore

/// The Android Publisher API (v3), authenticated with a service account's bearer token. A 401
/// refreshes the token once; 429/5xx are retried by the HTTP client with back-off (and
/// `Retry-After`), then reported as unavailable.
package struct AndroidPublisherClient: Sendable {
    let baseURL: String
    let http: HTTPClient
    let tokens: GoogleAccessTokens
    /// The service's clock, against which a `Retry-After` date is read.
    let now: @Sendable () -> Date

    package init(baseURL: String, http: HTTPClient, tokens: GoogleAccessTokens, now: @escaping @Sendable () -> Date) {
        self.now = now
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.http = http
        self.tokens = tokens
    }

    func productPurchaseV2(package: String, token: String, key: ServiceAccountKey) async throws -> ProductPurchaseV2 {
        try decode(
            try await send("GET", "\(application(package))/purchases/productsv2/tokens/\(segment(token))", key: key))
    }

    func subscriptionPurchaseV2(
        package: String, token: String, key: ServiceAccountKey
    ) async throws -> SubscriptionPurchaseV2 {
        try decode(
            try await send(
                "GET", "\(application(package))/purchases/subscriptionsv2/tokens/\(segment(token))", key: key))
    }

    func acknowledgeProduct(package: String, productID: String, token: String, key: ServiceAccountKey) async throws {
        _ = try await send(
            "POST",
            "\(application(package))/purchases/products/\(segment(productID))/tokens/\(segment(token)):acknowledge",
            key: key, body: Data("{}".utf8))
    }

    func consumeProduct(package: String, productID: String, token: String, key: ServiceAccountKey) async throws {
        _ = try await send(
            "POST", "\(application(package))/purchases/products/\(segment(productID))/tokens/\(segment(token)):consume",
            key: key)
    }

    func acknowledgeSubscription(
        package: String, subscriptionID: String, token: String, key: ServiceAccountKey
    ) async throws {
        _ = try await send(
            "POST",
            "\(application(package))/purchases/subscriptions/\(segment(subscriptionID))/tokens/\(segment(token)):acknowledge",
            key: key, body: Data("{}".utf8))
    }

    /// `monetization.onetimeproducts.get`: the product's purchase options (a rental's period).
    func oneTimeProduct(package: String, productID: String, key: ServiceAccountKey) async throws -> OneTimeProduct {
        try decode(try await send("GET", "\(application(package))/oneTimeProducts/\(segment(productID))", key: key))
    }

    /// `orders.batchGet`: the orders of `orderIDs` (1 to 1000, distinct). Google fails the whole
    /// request when one of them is unknown or of another package.
    func orders(
        package: String, orderIDs: [String], key: ServiceAccountKey
    ) async throws -> [BatchGetOrdersResponse.Order] {
        let query = orderIDs.map { "orderIds=\(GoogleAccessTokens.formEncode($0))" }.joined(separator: "&")
        let answer: BatchGetOrdersResponse = try decode(
            try await send("GET", "\(application(package))/orders:batchGet?\(query)", key: key))
        return answer.orders ?? []
    }

    /// `purchases.subscriptionsv2.revoke`: access ends now, with a full or prorated refund.
    func revokeSubscription(
        package: String, token: String, refund: SubscriptionRevocationBody.Refund, key: ServiceAccountKey
    ) async throws {
        _ = try await send(
            "POST", "\(application(package))/purchases/subscriptionsv2/tokens/\(segment(token)):revoke", key: key,
            body: try JSONEncoder().encode(SubscriptionRevocationBody(refund)))
    }

    /// `purchases.subscriptionsv2.cancel`: auto-renewal stops, access runs to the period's end.
    func cancelSubscription(package: String, token: String, key: ServiceAccountKey) async throws {
        _ = try await send(
            "POST", "\(application(package))/purchases/subscriptionsv2/tokens/\(segment(token)):cancel", key: key,
            body: try JSONEncoder().encode(SubscriptionCancellationBody()))
    }

    /// `purchases.subscriptionsv2.defer`: the next renewal moves `seconds` later; `etag` is the
    /// subscription's as last read (Google refuses a deferral of a subscription changed since).
    func deferSubscription(
        package: String, token: String, seconds: Int64, etag: String, key: ServiceAccountKey
    ) async throws -> SubscriptionDeferralAnswer {
        try decode(
            try await send(
                "POST", "\(application(package))/purchases/subscriptionsv2/tokens/\(segment(token)):defer", key: key,
                body: try JSONEncoder().encode(SubscriptionDeferralBody(seconds: seconds, etag: etag))))
    }

    /// Answers a chargeback review: `POST …/orders/{orderId}:reviewrefund` (an empty answer on success).
    func reviewRefund(package: String, orderID: String, body: Data, key: ServiceAccountKey) async throws {
        _ = try await send(
            "POST", "\(application(package))/orders/\(segment(orderID)):reviewrefund", key: key, body: body)
    }

    /// One page of voided purchases (one-time products and subscriptions: `type=1`), voided in
    /// [start, end] (epoch ms).
    func voidedPurchases(
        package: String, startMillis: Int64, endMillis: Int64, pageToken: String?, key: ServiceAccountKey
    ) async throws -> VoidedPurchaseList {
        var query = "type=1&maxResults=1000&startTime=\(startMillis)&endTime=\(endMillis)"
        if let pageToken { query += "&token=\(GoogleAccessTokens.formEncode(pageToken))" }
        return try decode(try await send("GET", "\(application(package))/purchases/voidedpurchases?\(query)", key: key))
    }

    // MARK: - Transport

    func application(_ package: String) -> String { "/androidpublisher/v3/applications/\(segment(package))" }

    func segment(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    func decode<T: Decodable>(_ body: Data) throws -> T {
        do { return try JSONDecoder().decode(T.self, from: body) } catch {
            throw GoogleAPIErrors.malformed(
                "Google answered with JSON we cannot read (\(T.self))", status: HTTPStatus(200))
        }
    }

    func send(_ method: String, _ path: String, key: ServiceAccountKey, body: Data? = nil) async throws -> Data {
        var refreshed = false
        while true {
            try Task.checkCancellation()
            let token = try await tokens.token(for: key)
            var headers: [(name: String, value: String)] = [
                ("Authorization", "Bearer \(token)"), ("Accept", "application/json"),
            ]
            if body != nil { headers.append(("Content-Type", "application/json")) }
            let response: HTTPClient.Response
            do {
                response = try await http.send(
                    HTTPClient.Request(method: method, url: baseURL + path, headers: headers, body: body))
            } catch {
                throw GoogleAPIErrors.unavailable("\(method) \(Self.redacted(path)) failed: \(error)")
            }
            let status = HTTPStatus(response.status)
            if status.isSuccess { return response.body }
            if status == .unauthorized && !refreshed {
                // Revoked or expired early: one fresh token, once.
                await tokens.invalidate(token, for: key)
                refreshed = true
                continue
            }
            throw GoogleAPIErrors.answered(
                status, detail: Self.googleMessage(response.body), request: "\(method) \(Self.redacted(path))",
                retryAfter: response.askedToWait(now: now()))
        }
    }

    /// Google's `{"error": {"code", "message", "status"}}`, shortened.
    static func googleMessage(_ body: Data) -> String? {
        struct Envelope: Decodable {
            struct Inner: Decodable { let message: String?; let status: String? }; let error: Inner?
        }
        guard let inner = (try? JSONDecoder().decode(Envelope.self, from: body))?.error else { return nil }
        let text = [inner.status, inner.message].compactMap { $0 }.joined(separator: ": ")
        return text.isEmpty ? nil : String(text.prefix(300))
    }

    /// A path for logs: purchase tokens are bearer secrets of a kind, so they are cut short.
    static func redacted(_ path: String) -> String {
        guard let range = path.range(of: "/tokens/") else { return path.components(separatedBy: "?").first ?? path }
        return path[..<range.upperBound] + "…"
    }
}
