import ReceiptCore

/// The report API's answers as the shared `StoreAPIError`: which status is which kind. Xsolla's
/// error body (`{"http_status_code", "message", "request_id"}`) gives the words.
enum XsollaAPIErrors {
    static let store = "Xsolla"
    static let credentialsFix = "check the client's --xsolla-merchant-id and --xsolla-api-key"

    /// The API answered `status` (not a success).
    static func answered(
        _ status: HTTPStatus, message: String?, request: String, retryAfter: Duration?
    ) -> StoreAPIError {
        let detail = message.map { String($0.prefix(200)) } ?? "HTTP \(status)"
        switch status.rawValue {
        case 401, 403:
            return StoreAPIError(
                .credentialsRefused, store: store, reason: "XSOLLA_PERMISSION_DENIED",
                "Xsolla refused the merchant id and API key (\(detail)). The key must be valid for all the "
                    + "company's projects (Publisher Account, Company settings, API keys)",
                status: status.rawValue, fix: credentialsFix)
        case 404:
            return StoreAPIError(
                .notFound, store: store, reason: "PURCHASE_NOT_FOUND", "Xsolla does not know it: \(detail)",
                status: status.rawValue)
        case 400, 422:
            return StoreAPIError(
                .refused, store: store, reason: "XSOLLA_REQUEST_REFUSED", "Xsolla refused the request: \(detail)",
                status: status.rawValue)
        default:
            return unavailable("\(request) answered HTTP \(status)", status: status, retryAfter: retryAfter)
        }
    }

    /// 429, 5xx, timeouts, no answer, after the retries: try again later.
    static func unavailable(_ detail: String, status: HTTPStatus? = nil, retryAfter: Duration? = nil) -> StoreAPIError {
        StoreAPIError(
            .unavailable, store: store, reason: "XSOLLA_UNAVAILABLE", "Xsolla did not answer: \(detail); safe to retry",
            status: status?.rawValue, retryAfter: retryAfter)
    }

    static func malformed(_ detail: String) -> StoreAPIError {
        StoreAPIError(.malformedAnswer, store: store, reason: "XSOLLA_INVALID_RESPONSE", detail, status: 200)
    }

    static func notConfigured(_ detail: String) -> StoreAPIError {
        StoreAPIError(.notConfigured, store: store, reason: "XSOLLA_NOT_CONFIGURED", detail, fix: credentialsFix)
    }

    /// The report's record lists no item, package or subscription (a Web Shop order's, which
    /// its `order_paid` webhook records with its items).
    static let namesNoProduct = StoreAPIError(
        .notFound, store: store, reason: "PURCHASE_NOT_FOUND",
        "Xsolla's report lists no item for this transaction; its order_paid webhook records it", status: 200)

    /// The transaction is Xsolla's but not paid (created, processing, under review, failed).
    static func notCompleted(_ status: String) -> StoreAPIError {
        StoreAPIError(
            .notFound, store: store, reason: "PURCHASE_NOT_COMPLETED",
            "Xsolla lists this transaction as \(status), not paid", status: 200, storeCode: status)
    }
}
