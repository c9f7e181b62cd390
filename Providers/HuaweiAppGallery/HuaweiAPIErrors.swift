import ReceiptCore

/// Huawei's `responseCode` of a 200 answer. The server API's error-code table: 0 success, 1 and
/// -1 internal errors, 5 invalid parameter (or IAP not enabled), 6 critical error (usually the
/// token is another app's, or a subscription's sent to the order service: the request's token,
/// not the app's credentials), 8 not owned, 9 consumed or confirmed already, 11 account
/// abnormal, 12 no such record (a token no longer the latest of its product).
extension ResponseCode {
    static let success = Self(rawValue: "0")
    static let internalError = Self(rawValue: "1")
    static let internalFailure = Self(rawValue: "-1")
    static let invalidParameter = Self(rawValue: "5")
    static let criticalError = Self(rawValue: "6")
    static let notOwned = Self(rawValue: "8")
    static let consumedOrConfirmed = Self(rawValue: "9")
    static let accountAbnormal = Self(rawValue: "11")
    static let noSuchRecord = Self(rawValue: "12")
}

extension StoreAPIError {
    /// Huawei's `responseCode`, when the failure came with one.
    var huaweiCode: ResponseCode? { storeCode.map(ResponseCode.init(rawValue:)) }
}

/// Huawei's answers as the shared `StoreAPIError`: which HTTP status and `responseCode` is which
/// kind, under the reasons and words Huawei's refusals have always been recorded with.
enum HuaweiAPIErrors {
    static let store = "Huawei"
    static let credentialsFix = "check the client's --huawei-app-id and --huawei-app-secret"

    /// A 200 answer whose `responseCode` is not success. An undocumented code is final:
    /// retrying cannot make it succeed.
    static func refused(_ code: ResponseCode, message: String?) -> StoreAPIError {
        let detail = message.map { String($0.prefix(200)) } ?? "no message"
        return switch code {
        case .internalError, .internalFailure:
            unavailable("Huawei had an internal error (\(detail))", status: HTTPStatus(200), code: code)
        case .criticalError: tokenRefused("Huawei refused this purchase token (\(detail))", status: 200, code: code)
        case .noSuchRecord:
            StoreAPIError(
                .notFound, store: store, reason: "PURCHASE_SUPERSEDED",
                "Huawei verifies only the latest purchase of a product, and this token was delivered and the product "
                    + "bought again since: \(detail)", status: 200, storeCode: code.rawValue)
        case .notOwned, .consumedOrConfirmed:
            StoreAPIError(
                .notFound, store: store, reason: "PURCHASE_NOT_FOUND",
                "Huawei does not know this purchase token as the latest unconfirmed one of its product: \(detail)",
                status: 200, storeCode: code.rawValue)
        default: purchaseRefused(detail, status: 200, code: code)
        }
    }

    /// The order or subscription service answered `status` (not a success, not the first 401,
    /// which is retried with a fresh token), with its envelope's code and message when it sent one.
    static func answered(
        _ status: HTTPStatus, code: ResponseCode?, message: String?, request: String, retryAfter: Duration?
    ) -> StoreAPIError {
        switch status {
        case .unauthorized, .forbidden:
            credentialsRefused("Huawei refused the app's access token", status: status)
        case .badRequest, .notFound:
            code == .criticalError
                ? tokenRefused(message ?? "HTTP \(status)", status: status.rawValue, code: code)
                : purchaseRefused(message ?? "HTTP \(status)", status: status.rawValue, code: code)
        default:
            unavailable("\(request) answered HTTP \(status)", status: status, retryAfter: retryAfter)
        }
    }

    /// The OAuth endpoint answered `status` for `app`'s id and secret.
    static func tokenEndpointAnswered(_ status: HTTPStatus, app: String, detail: String) -> StoreAPIError {
        switch status {
        case .badRequest, .unauthorized, .forbidden:
            credentialsRefused(
                "the OAuth endpoint refused \(app) (\(detail.isEmpty ? "no detail" : detail))", status: status)
        default:
            unavailable("the OAuth endpoint answered HTTP \(status)", status: status)
        }
    }

    /// Huawei refuses the app's credentials (401 after one fresh token, 403, the token endpoint
    /// refusing the app id and secret).
    static func credentialsRefused(_ detail: String, status: HTTPStatus) -> StoreAPIError {
        StoreAPIError(
            .credentialsRefused, store: store, reason: "HUAWEI_PERMISSION_DENIED",
            "\(detail). Check the client's --huawei-app-id and --huawei-app-secret (AppGallery Connect, "
                + "Project settings, App information) and that In-App Purchases is enabled for the app",
            status: status.rawValue, fix: credentialsFix)
    }

    /// 5xx, timeouts, no answer, an internal error, after the retries: try again later.
    static func unavailable(
        _ detail: String, status: HTTPStatus? = nil, code: ResponseCode? = nil, retryAfter: Duration? = nil
    ) -> StoreAPIError {
        StoreAPIError(
            .unavailable, store: store, reason: "HUAWEI_UNAVAILABLE",
            "Huawei IAP did not answer: \(detail); safe to retry",
            status: status?.rawValue, storeCode: code?.rawValue, retryAfter: retryAfter)
    }

    /// An answer we cannot read.
    static func malformed(_ detail: String, code: ResponseCode? = nil) -> StoreAPIError {
        StoreAPIError(
            .malformedAnswer, store: store, reason: "HUAWEI_INVALID_RESPONSE", detail, status: 200,
            storeCode: code?.rawValue)
    }

    /// The answer's signature does not match the app's IAP public key.
    static func forged() -> StoreAPIError {
        StoreAPIError(
            .forged, store: store, reason: "INVALID_SIGNATURE",
            "the purchase data's signature does not match the app's IAP public key", status: 200)
    }

    /// No app id, secret or IAP key for this client.
    static func notConfigured(_ detail: String) -> StoreAPIError {
        StoreAPIError(.notConfigured, store: store, reason: "HUAWEI_NOT_CONFIGURED", detail, fix: credentialsFix)
    }

    /// Code 6 names the token, not the app's credentials: another app's token, or a
    /// subscription's sent to the order service without its subscription id.
    private static func tokenRefused(_ detail: String, status: Int, code: ResponseCode?) -> StoreAPIError {
        StoreAPIError(
            .refused, store: store, reason: "PURCHASE_TOKEN_REFUSED",
            "\(detail). The token is usually another app's, or a subscription's sent without its "
                + "subscription id: for a subscription send the InAppPurchaseData JSON as the receipt, or "
                + "huawei_subscription_id beside the token", status: status, storeCode: code?.rawValue)
    }

    private static func purchaseRefused(_ detail: String, status: Int, code: ResponseCode?) -> StoreAPIError {
        StoreAPIError(
            .refused, store: store, reason: "PURCHASE_REJECTED", "Huawei refused the purchase: \(detail)",
            status: status,
            storeCode: code?.rawValue)
    }
}
