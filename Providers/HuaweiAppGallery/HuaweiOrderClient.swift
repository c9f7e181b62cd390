import Foundation
import HTTPClient
import ReceiptCore

/// Huawei's order and subscription services, authenticated with an app-level access token as
/// `Authorization: Basic base64("APPAT:" + token)`. A 401 replaces the token once; 429/5xx are
/// retried by the HTTP client with back-off, then reported as unavailable. Every request asks
/// for RSASSA-PSS signatures (`HW-IAP-APPINFO`), the algorithm Huawei recommends; the answer
/// names the algorithm it used.
package struct HuaweiOrderClient: Sendable {
    let configuration: HuaweiAppGalleryConfiguration
    let http: HTTPClient
    let tokens: HuaweiAccessTokens
    /// The service's clock, against which a `Retry-After` date is read.
    let now: @Sendable () -> Date

    /// The signed purchase data an answer carries, exactly as Huawei sent it.
    struct Signed: Sendable {
        let data: String
        let signature: String?
        let algorithm: String?
    }

    /// `POST {orders}/applications/purchases/tokens/verify`: a consumable or non-consumable.
    func verifyToken(
        _ token: String, productID: String, site: HuaweiSite, app: HuaweiAccessTokens.App,
        deadline: ContinuousClock.Instant?
    ) async throws -> Signed {
        let body = try await send(
            configuration.roots(for: site).orders + "/applications/purchases/tokens/verify",
            ["purchaseToken": token, "productId": productID], app: app, deadline: deadline)
        let answer: OrderVerifyResponse = try decode(body)
        try Self.check(answer.responseCode, answer.responseMessage)
        guard let data = answer.purchaseTokenData, !data.isEmpty else {
            throw HuaweiAPIErrors.malformed("Huawei answered without purchaseTokenData", code: .success)
        }
        return Signed(data: data, signature: answer.dataSignature, algorithm: answer.signatureAlgorithm)
    }

    /// `POST {subscriptions}/sub/applications/v2/purchases/get`: a subscription's latest receipt.
    func subscription(
        _ token: String, subscriptionID: String, site: HuaweiSite, app: HuaweiAccessTokens.App,
        deadline: ContinuousClock.Instant?
    ) async throws -> Signed {
        let body = try await send(
            configuration.roots(for: site).subscriptions + "/sub/applications/v2/purchases/get",
            ["subscriptionId": subscriptionID, "purchaseToken": token], app: app, deadline: deadline)
        let answer: SubscriptionGetResponse = try decode(body)
        try Self.check(answer.responseCode, answer.responseMessage)
        guard let data = answer.inappPurchaseData, !data.isEmpty else {
            throw HuaweiAPIErrors.malformed("Huawei answered without inappPurchaseData", code: .success)
        }
        return Signed(data: data, signature: answer.dataSignature, algorithm: answer.signatureAlgorithm)
    }

    /// `POST {orders}/applications/v2/purchases/confirm`: a consumable delivered (Huawei lets
    /// the product be bought again only after this).
    func confirm(_ token: String, productID: String, site: HuaweiSite, app: HuaweiAccessTokens.App) async throws {
        let body = try await send(
            configuration.roots(for: site).orders + "/applications/v2/purchases/confirm",
            ["purchaseToken": token, "productId": productID], app: app, deadline: nil)
        let answer: ResponseEnvelope = try decode(body)
        try Self.check(answer.responseCode, answer.responseMessage)
    }

    /// `POST {orders}/applications/v2/purchases/cancelledList`: one page of the app's cancelled or
    /// refunded purchases in `[startAt, endAt)` (epoch milliseconds), or the page after
    /// `continuationToken` (Huawei then ignores the window). `includeSubscriptions` asks for
    /// `type` 1 (consumables, non-consumables and subscriptions) instead of 0 (one-time products).
    func cancelledList(
        startAt: Int64, endAt: Int64, maxRows: Int, includeSubscriptions: Bool, continuationToken: String?,
        site: HuaweiSite,
        app: HuaweiAccessTokens.App
    ) async throws -> HuaweiCancelledPurchasePage {
        let query = CancelledListQuery(
            startAt: startAt, endAt: endAt, maxRows: maxRows, type: includeSubscriptions ? 1 : 0,
            continuationToken: continuationToken)
        let body = try await send(
            configuration.roots(for: site).orders + "/applications/v2/purchases/cancelledList",
            body: try Self.encoded(query), app: app, deadline: nil)
        let answer: ResponseEnvelope = try decode(body)
        try Self.check(answer.responseCode, answer.responseMessage)
        return try HuaweiCancelledPurchasePage.decode(body)
    }

    // MARK: - Transport

    /// `responseCode` "0" passes; anything else (or none) is Huawei's refusal.
    static func check(_ code: ResponseCode?, _ message: String?) throws(StoreAPIError) {
        guard let code else { throw HuaweiAPIErrors.malformed("Huawei answered without a responseCode") }
        guard code != .success else { return }
        throw HuaweiAPIErrors.refused(code, message: message)
    }

    private func decode<T: Decodable>(_ body: Data) throws -> T {
        do { return try JSONDecoder().decode(T.self, from: body) } catch {
            throw HuaweiAPIErrors.malformed("Huawei answered with JSON we cannot read (\(T.self))")
        }
    }

    private func send(
        _ url: String, _ fields: [String: String], app: HuaweiAccessTokens.App, deadline: ContinuousClock.Instant?
    ) async throws -> Data {
        try await send(url, body: try Self.encoded(fields), app: app, deadline: deadline)
    }

    /// `cancelledList`'s body. Numbers as numbers, as Huawei's own server demo sends them; no
    /// `continuationToken` key on a first page.
    private struct CancelledListQuery: Encodable {
        let startAt: Int64
        let endAt: Int64
        let maxRows: Int
        let type: Int
        let continuationToken: String?
    }

    /// A request body: keys sorted, so the same call sends the same bytes.
    private static func encoded(_ body: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(body)
    }

    private func send(
        _ url: String, body: Data, app: HuaweiAccessTokens.App, deadline: ContinuousClock.Instant?
    ) async throws -> Data {
        var refreshed = false
        while true {
            try Task.checkCancellation()
            let token = try await tokens.token(for: app)
            var request = HTTPClient.Request(
                method: "POST", url: url,
                headers: [
                    ("Authorization", "Basic " + Data("APPAT:\(token)".utf8).base64EncodedString()),
                    ("Content-Type", "application/json; charset=UTF-8"), ("Accept", "application/json"),
                    ("HW-IAP-APPINFO", #"{"signatureAlgorithm":"SHA256WithRSA/PSS"}"#),
                ], body: body)
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else {
                    throw HuaweiAPIErrors.unavailable("the request's deadline passed before Huawei was asked")
                }
                request.timeout = left
            }
            let response: HTTPClient.Response
            do { response = try await http.send(request) } catch {
                throw HuaweiAPIErrors.unavailable("POST \(Self.path(url)) failed: \(error)")
            }
            let status = HTTPStatus(response.status)
            if status.isSuccess { return response.body }
            if status == .unauthorized && !refreshed {
                // Expired early or revoked: one fresh token, once.
                await tokens.invalidate(token, for: app)
                refreshed = true
                continue
            }
            let envelope = try? JSONDecoder().decode(ResponseEnvelope.self, from: response.body)
            throw HuaweiAPIErrors.answered(
                status, code: envelope?.responseCode, message: envelope?.responseMessage.map { String($0.prefix(200)) },
                request: "POST \(Self.path(url))", retryAfter: response.askedToWait(now: now()))
        }
    }

    /// A URL for messages: the path only.
    static func path(_ url: String) -> String { URL(string: url)?.path ?? url }
}
