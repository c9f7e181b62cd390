import Foundation
import ReceiptCore

/// What went wrong talking to Huawei, sorted by what the caller should do about it.
package struct HuaweiAPIError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// The purchase token is unknown to Huawei, not the latest of its product (a later purchase
        /// of it superseded it), or not owned (`responseCode` 8, 9, 12).
        case notFound
        /// Huawei refuses the request's values (`responseCode` 5, 6, 11, and other final codes).
        /// Code 6 ("critical error") names the token, not the app's credentials: a token of
        /// another app, or a subscription's sent to the order service.
        case rejected
        /// Huawei refuses the app's credentials (401 after one fresh token, 403, the token
        /// endpoint refusing the app id and secret).
        case permission
        /// 5xx, timeouts, `responseCode` 1 or -1, after the retries: try again later.
        case unavailable
        /// An answer we cannot read.
        case invalidResponse
        /// The answer's signature does not match the app's IAP public key: a forgery.
        case badSignature
        /// No app id, secret or IAP key for this client.
        case notConfigured
    }

    package let kind: Kind
    package let status: Int?
    /// Huawei's `responseCode`, when it answered one.
    package let responseCode: String?
    package let message: String
    /// What a `429` said to wait (`Retry-After`), where it said.
    package var retryAfter: Duration?

    package init(
        _ kind: Kind, status: Int? = nil, responseCode: String? = nil, _ message: String, retryAfter: Duration? = nil
    ) {
        self.kind = kind
        self.status = status
        self.responseCode = responseCode
        self.message = message
        self.retryAfter = retryAfter
    }

    package var description: String {
        "\(kind)\(status.map { " (HTTP \($0))" } ?? "")\(responseCode.map { " (responseCode \($0))" } ?? ""): \(message)"
    }

    /// Huawei's `responseCode` of a 200 answer ("0" is success, never passed here). The server
    /// API's error-code table: 1 and -1 internal errors (retry), 5 invalid parameter (or IAP not
    /// enabled), 6 critical error (usually the token belongs to another app, or a subscription
    /// sent to the order service: the request's token, not the app's credentials), 8 not owned,
    /// 9 already consumed or confirmed, 11 account abnormal, 12 no such record (a token no longer
    /// the latest of its product). An undocumented code is final: retrying cannot make it succeed.
    static func response(code: String, message: String?) -> HuaweiAPIError {
        let detail = message.map { String($0.prefix(200)) } ?? "no message"
        return switch code {
        case "-1", "1":
            HuaweiAPIError(.unavailable, status: 200, responseCode: code, "Huawei had an internal error (\(detail))")
        case "6":
            HuaweiAPIError(.rejected, status: 200, responseCode: code, "Huawei refused this purchase token (\(detail))")
        case "8", "9", "12": HuaweiAPIError(.notFound, status: 200, responseCode: code, detail)
        default: HuaweiAPIError(.rejected, status: 200, responseCode: code, detail)
        }
    }

    /// As the pipeline's shared codes: a forgery and Huawei's final refusals are
    /// VERIFICATION_FAILED, everything an operator or a retry can fix VERIFIER_ERROR.
    var verificationError: StoreVerificationError {
        switch kind {
        case .badSignature:
            StoreVerificationError(
                code: .verificationFailed, reason: "INVALID_SIGNATURE",
                message: "the purchase data's signature does not match the app's IAP public key")
        case .notFound where responseCode == "12":
            StoreVerificationError(
                code: .verificationFailed, reason: "PURCHASE_SUPERSEDED",
                message:
                    "Huawei verifies only the latest purchase of a product, and this token was delivered and the product "
                    + "bought again since: \(message)")
        case .notFound:
            StoreVerificationError(
                code: .verificationFailed, reason: "PURCHASE_NOT_FOUND",
                message:
                    "Huawei does not know this purchase token as the latest unconfirmed one of its product: \(message)")
        case .rejected where responseCode == "6":
            StoreVerificationError(
                code: .verificationFailed, reason: "PURCHASE_TOKEN_REFUSED",
                message: "\(message). The token is usually another app's, or a subscription's sent without its "
                    + "subscription id: for a subscription send the InAppPurchaseData JSON as the receipt, or "
                    + "huawei_subscription_id beside the token")
        case .rejected:
            StoreVerificationError(
                code: .verificationFailed, reason: "PURCHASE_REJECTED",
                message: "Huawei refused the purchase: \(message)")
        case .permission:
            StoreVerificationError(
                code: .verifierError, reason: "HUAWEI_PERMISSION_DENIED",
                message: "\(message). Check the client's --huawei-app-id and --huawei-app-secret (AppGallery Connect, "
                    + "Project settings, App information) and that In-App Purchases is enabled for the app")
        case .unavailable:
            StoreVerificationError(
                code: .verifierError, reason: "HUAWEI_UNAVAILABLE",
                message: "Huawei IAP did not answer: \(message); safe to retry",
                isRetryable: true)
        case .invalidResponse:
            StoreVerificationError(
                code: .verifierError, reason: "HUAWEI_INVALID_RESPONSE", message: message, isRetryable: true)
        case .notConfigured:
            StoreVerificationError(code: .verifierError, reason: "HUAWEI_NOT_CONFIGURED", message: message)
        }
    }
}
