import Foundation
package import ReceiptCore

/// What went wrong asking RVS, sorted by what the caller should do about it. No message here
/// ever holds the request URL: the shared secret is one of its path segments.
package struct RVSError: Error, Sendable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable {
        /// 400: RVS does not know the receipt (in the environment asked).
        case unknownReceipt
        /// 497: the receipt belongs to another Amazon user.
        case wrongUser
        /// 496: RVS refuses the shared secret.
        case badSharedSecret
        /// 410, 429, 5xx, no answer, after the retries or when time ran out: try again later.
        case unavailable
        /// Another status, or an answer we cannot read.
        case invalidResponse
        /// The client has no shared secret.
        case notConfigured
    }

    package let kind: Kind
    package let status: Int?
    package let message: String

    package init(_ kind: Kind, status: Int? = nil, _ message: String) {
        self.kind = kind
        self.status = status
        self.message = message
    }

    package var description: String { "\(kind)\(status.map { " (HTTP \($0))" } ?? ""): \(message)" }

    /// Tells the operator where the secret goes, under both names they meet it by.
    static let secretHelp =
        "set the client's Amazon shared secret (\(AmazonAppstoreProvider.Setting.sharedSecret), "
        + "\(AmazonAppstoreProvider.Setting.sharedSecretFlag)) to the one on the Amazon Developer Console's Shared Key page"

    /// As the pipeline's shared codes: unknown receipt and wrong user are final refusals (422);
    /// the rest are the verifier's trouble (502), retryable only where waiting can help.
    package var verificationError: StoreVerificationError {
        switch kind {
        case .unknownReceipt:
            StoreVerificationError(
                code: .verificationFailed, reason: "RECEIPT_NOT_FOUND", message: "Amazon does not know this receipt")
        case .wrongUser:
            StoreVerificationError(
                code: .verificationFailed, reason: "USER_MISMATCH",
                message: "the receipt belongs to another Amazon user")
        case .badSharedSecret:
            StoreVerificationError(
                code: .verifierError, reason: "AMAZON_SHARED_SECRET_INVALID",
                message: "Amazon refused the shared secret: " + Self.secretHelp)
        case .notConfigured:
            StoreVerificationError(
                code: .verifierError, reason: "AMAZON_NOT_CONFIGURED", message: "\(message): " + Self.secretHelp)
        case .unavailable:
            StoreVerificationError(
                code: .verifierError, reason: "AMAZON_UNAVAILABLE",
                message: "Amazon RVS did not answer: \(message); safe to retry",
                isRetryable: true)
        case .invalidResponse:
            StoreVerificationError(
                code: .verifierError, reason: "AMAZON_INVALID_RESPONSE", message: message, isRetryable: true)
        }
    }
}
