import ReceiptCore

/// RVS's own statuses beside the common ones.
extension HTTPStatus {
    /// RVS refuses the shared secret.
    static let rvsInvalidSharedSecret = Self(496)
    /// The receipt belongs to another Amazon user.
    static let rvsInvalidUser = Self(497)
}

/// Amazon RVS's answers as the shared `StoreAPIError`: which status is which kind, under the
/// reasons and words Amazon's refusals have always been recorded with. No message here ever
/// holds the request URL: the shared secret is one of its path segments.
enum AmazonAPIErrors {
    static let store = "Amazon"

    /// Tells the operator where the secret goes, under both names they meet it by.
    static let secretHelp =
        "set the client's Amazon shared secret (\(AmazonAppstoreProvider.Setting.sharedSecret), "
        + "\(AmazonAppstoreProvider.Setting.sharedSecretFlag)) to the one on the Amazon Developer Console's Shared Key page"

    /// RVS answers 410 for a moment's trouble, besides the usual 429 and 5xx.
    static func isTransient(_ status: HTTPStatus) -> Bool {
        status == .gone || status == .tooManyRequests || status.isServerError
    }

    /// RVS answered `status` (not 200) after `attempts` tries.
    static func answered(_ status: HTTPStatus, attempts: Int) -> StoreAPIError {
        switch status {
        case .badRequest: unknownReceipt
        case .rvsInvalidSharedSecret:
            StoreAPIError(
                .credentialsRefused, store: store, reason: "AMAZON_SHARED_SECRET_INVALID",
                "Amazon refused the shared secret: " + secretHelp, status: status.rawValue, fix: secretHelp)
        case .rvsInvalidUser:
            StoreAPIError(
                .refused, store: store, reason: "USER_MISMATCH", "the receipt belongs to another Amazon user",
                status: status.rawValue)
        case let status where isTransient(status):
            unavailable("RVS answered HTTP \(status) \(attempts) times", status: status)
        default:
            malformed("RVS answered HTTP \(status)", status: status)
        }
    }

    /// RVS does not know the receipt (in the environments asked).
    static let unknownReceipt = StoreAPIError(
        .notFound, store: store, reason: "RECEIPT_NOT_FOUND", "Amazon does not know this receipt",
        status: HTTPStatus.badRequest.rawValue)

    /// No answer, after the retries or when time ran out: try again later.
    static func unavailable(_ detail: String, status: HTTPStatus? = nil) -> StoreAPIError {
        StoreAPIError(
            .unavailable, store: store, reason: "AMAZON_UNAVAILABLE",
            "Amazon RVS did not answer: \(detail); safe to retry",
            status: status?.rawValue)
    }

    /// Another status, or an answer we cannot read.
    static func malformed(_ detail: String, status: HTTPStatus) -> StoreAPIError {
        StoreAPIError(
            .malformedAnswer, store: store, reason: "AMAZON_INVALID_RESPONSE", detail, status: status.rawValue)
    }

    /// The client has no shared secret.
    static func notConfigured(_ detail: String) -> StoreAPIError {
        StoreAPIError(
            .notConfigured, store: store, reason: "AMAZON_NOT_CONFIGURED", "\(detail): " + secretHelp, fix: secretHelp)
    }
}
