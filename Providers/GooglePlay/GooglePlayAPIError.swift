import Foundation
import ReceiptCore

/// What went wrong talking to Google, sorted by what the caller should do about it.
package struct GooglePlayAPIError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// 404/410: the token is unknown or expired.
        case notFound
        /// 400: Google refuses the request's values (a malformed token, a token of another product).
        case rejected
        /// 401/403 (after one fresh token): the service account lacks access.
        case permission
        /// 429, 5xx, timeouts, after the retries: try again later.
        case unavailable
        /// An answer we cannot read.
        case invalidResponse
        /// No service-account key for this client or the service.
        case notConfigured
    }

    package let kind: Kind
    package let status: Int?
    package let message: String
    /// How long Google asked to be left alone (its `Retry-After`), when it said.
    package var retryAfter: Duration?

    package init(_ kind: Kind, status: Int? = nil, _ message: String, retryAfter: Duration? = nil) {
        self.kind = kind
        self.status = status
        self.message = message
        self.retryAfter = retryAfter
    }

    package var description: String { "\(kind)\(status.map { " (HTTP \($0))" } ?? ""): \(message)" }

    /// As the pipeline's shared codes: 404/410 and 400 are final refusals (422), the rest 502.
    var verificationError: StoreVerificationError {
        switch kind {
        case .notFound:
            StoreVerificationError(
                code: .verificationFailed, reason: "PURCHASE_NOT_FOUND",
                message: "Google does not know this purchase token (unknown, or expired)")
        case .rejected:
            StoreVerificationError(
                code: .verificationFailed, reason: "PURCHASE_REJECTED",
                message: "Google refused the purchase: \(message)")
        case .permission:
            StoreVerificationError(
                code: .verifierError, reason: "GOOGLE_PERMISSION_DENIED",
                message: Self.permissionHelp(status: status, message))
        case .unavailable:
            StoreVerificationError(
                code: .verifierError, reason: "GOOGLE_UNAVAILABLE",
                message: "Google Play did not answer: \(message); safe to retry",
                isRetryable: true)
        case .invalidResponse:
            StoreVerificationError(
                code: .verifierError, reason: "GOOGLE_INVALID_RESPONSE", message: message, isRetryable: true)
        case .notConfigured:
            StoreVerificationError(code: .verifierError, reason: "GOOGLE_NOT_CONFIGURED", message: message)
        }
    }

    /// What an operator should do about a failed scheduled read: a refused key names its fix and
    /// settings; a rate limit or an outage waits for the next run, which resumes where this stopped.
    var operatorHelp: String {
        switch kind {
        case .permission:
            Self.permissionHelp(status: status, message)
                + " (the key: the client's --google-service-account-key, or RECEIPTGATE_GOOGLE_SERVICE_ACCOUNT_KEY_PATH)"
        case .notConfigured:
            "\(message) (set the client's --google-service-account-key, or RECEIPTGATE_GOOGLE_SERVICE_ACCOUNT_KEY_PATH)"
        case .unavailable: "\(self); the next run resumes where this one stopped"
        default: "\(self)"
        }
    }

    /// Names the permission problem, for the caller and the operator's log.
    static func permissionHelp(status: Int?, _ detail: String) -> String {
        "Google refused the service account (HTTP \(status.map(String.init) ?? "?")): \(detail). Invite the service account in Play Console "
            + "(Users and permissions) with \"View financial data\" and \"Manage orders and subscriptions\" for this app, and enable the "
            + "Google Play Android Developer API in its Cloud project"
    }
}
