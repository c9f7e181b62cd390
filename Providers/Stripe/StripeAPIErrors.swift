import ReceiptCore

/// Stripe's answers as the shared `StoreAPIError`: which HTTP status is which kind. Stripe
/// answers every failure `{"error": {"type", "code", "message"}}`; its status says what kind of
/// failure it is (the API reference's "HTTP status code summary"): 400 a request it refuses, 401
/// no valid key, 402 a failed payment, 403 a key without the permission, 404 an object it does
/// not have, 409 an idempotency clash, 424 an outside network's failure, 429 too many requests,
/// 5xx its own trouble.
enum StripeAPIErrors {
    static let store = "Stripe"
    static let credentialsFix =
        "check the client's --stripe-api-key (a secret key, or a restricted key that may read "
        + "Checkout Sessions, Payment Intents, Charges, Disputes, Subscriptions, Invoices and Events)"

    /// Stripe answered `status` with `error` (its envelope, when it sent one).
    static func answered(
        _ status: HTTPStatus, error: StripeErrorBody?, request: String, retryAfter: Duration?
    ) -> StoreAPIError {
        let detail = error?.message.map { String($0.prefix(200)) } ?? "HTTP \(status)"
        let code = error?.code ?? error?.type
        switch status.rawValue {
        case 401, 403:
            return StoreAPIError(
                .credentialsRefused, store: store, reason: "STRIPE_KEY_REFUSED",
                "Stripe refused the client's API key for \(request) (\(detail))", status: status.rawValue,
                storeCode: code, fix: credentialsFix)
        case 404:
            return StoreAPIError(
                .notFound, store: store, reason: "PURCHASE_NOT_FOUND",
                "Stripe has no such object for this key: \(detail)", status: status.rawValue, storeCode: code)
        case 429, 500...599:
            return unavailable("\(request) answered HTTP \(status) (\(detail))", status: status, retryAfter: retryAfter)
        default:
            return StoreAPIError(
                .refused, store: store, reason: "STRIPE_REQUEST_REFUSED", "Stripe refused \(request): \(detail)",
                status: status.rawValue, storeCode: code)
        }
    }

    /// No answer, a timeout, Stripe's trouble after the retries: try again later.
    static func unavailable(_ detail: String, status: HTTPStatus? = nil, retryAfter: Duration? = nil) -> StoreAPIError {
        StoreAPIError(
            .unavailable, store: store, reason: "STRIPE_UNAVAILABLE", "Stripe did not answer: \(detail); safe to retry",
            status: status?.rawValue, retryAfter: retryAfter)
    }

    /// An answer we cannot read.
    static func malformed(_ detail: String) -> StoreAPIError {
        StoreAPIError(.malformedAnswer, store: store, reason: "STRIPE_INVALID_RESPONSE", detail, status: 200)
    }

    /// No key or account for this client.
    static func notConfigured(_ detail: String) -> StoreAPIError {
        StoreAPIError(.notConfigured, store: store, reason: "STRIPE_NOT_CONFIGURED", detail, fix: credentialsFix)
    }
}

/// Stripe's error envelope's `error` member.
struct StripeErrorBody: Sendable {
    var type: String?
    var code: String?
    var message: String?
}
