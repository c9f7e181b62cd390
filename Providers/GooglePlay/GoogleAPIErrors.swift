import ReceiptCore

/// Google's answers as the shared `StoreAPIError`: which status of the Play Developer API and of
/// the OAuth token endpoint is which kind, under the reasons and words Google's refusals have
/// always been recorded with.
enum GoogleAPIErrors {
    static let store = "Google"

    /// Where refused or missing keys are set.
    static let keyFix =
        "the key: the client's --google-service-account-key, or RECEIPTGATE_GOOGLE_SERVICE_ACCOUNT_KEY_PATH"

    /// The Play Developer API answered `status` (not a success, not the first 401, which is
    /// retried with a fresh token). `detail` is Google's own message, when it gave one.
    static func answered(
        _ status: HTTPStatus, detail: String?, request: String, retryAfter: Duration?
    ) -> StoreAPIError {
        switch status {
        case .unauthorized, .forbidden:
            credentialsRefused(status: status, detail ?? "permission denied")
        case .notFound, .gone:
            // The token is unknown or expired.
            StoreAPIError(
                .notFound, store: store, reason: "PURCHASE_NOT_FOUND",
                "Google does not know this purchase token (unknown, or expired)", status: status.rawValue)
        case .badRequest:
            // Google refuses the request's values (a malformed token, a token of another product).
            StoreAPIError(
                .refused, store: store, reason: "PURCHASE_REJECTED",
                "Google refused the purchase: \(detail ?? "invalid request")", status: status.rawValue)
        default:
            unavailable("\(request) answered HTTP \(status)", status: status, retryAfter: retryAfter)
        }
    }

    /// The token endpoint answered `status` for `key` (an access token's exchange).
    static func tokenEndpointAnswered(_ status: HTTPStatus, key: String, detail: String) -> StoreAPIError {
        switch status {
        case .badRequest, .unauthorized, .forbidden:
            // invalid_grant, unauthorized_client...: a key problem, for the operator to fix.
            credentialsRefused(
                status: status, "the token endpoint refused \(key) (\(detail.isEmpty ? "no detail" : detail))")
        default:
            unavailable("the token endpoint answered HTTP \(status)", status: status, retryAfter: nil)
        }
    }

    /// The service account lacks access, after one fresh token: names the fix in Play Console.
    static func credentialsRefused(status: HTTPStatus, _ detail: String) -> StoreAPIError {
        StoreAPIError(
            .credentialsRefused, store: store, reason: "GOOGLE_PERMISSION_DENIED",
            "Google refused the service account (HTTP \(status)): \(detail). Invite the service account in Play Console "
                + "(Users and permissions) with \"View financial data\" and \"Manage orders and subscriptions\" for "
                + "this app, and enable the Google Play Android Developer API in its Cloud project",
            status: status.rawValue, fix: keyFix)
    }

    /// 429, 5xx, timeouts, no answer, after the retries: try again later.
    static func unavailable(_ detail: String, status: HTTPStatus? = nil, retryAfter: Duration? = nil) -> StoreAPIError {
        StoreAPIError(
            .unavailable, store: store, reason: "GOOGLE_UNAVAILABLE",
            "Google Play did not answer: \(detail); safe to retry", status: status?.rawValue, retryAfter: retryAfter)
    }

    /// An answer we cannot read.
    static func malformed(_ detail: String, status: HTTPStatus? = nil) -> StoreAPIError {
        StoreAPIError(
            .malformedAnswer, store: store, reason: "GOOGLE_INVALID_RESPONSE", detail, status: status?.rawValue)
    }

    /// No usable service-account key for this client or the service.
    static func notConfigured(_ detail: String) -> StoreAPIError {
        StoreAPIError(.notConfigured, store: store, reason: "GOOGLE_NOT_CONFIGURED", detail, fix: "set \(keyFix)")
    }
}
