import ReceiptCore

/// An `errorCode` of the App Store Server API that the service acts on.
struct AppleAPIErrorCode: RawRepresentable, Hashable, Sendable {
    let rawValue: Int
    init(rawValue: Int) { self.rawValue = rawValue }

    /// TransactionIdNotFoundError: the transaction id is unknown in this environment.
    static let transactionIDNotFound = Self(rawValue: 4_040_010)
    /// AppTransactionDoesNotExistError: no app transaction for the customer the id names.
    static let appTransactionNotFound = Self(rawValue: 4_040_019)
}

extension StoreAPIError {
    /// Apple does not know the transaction in the environment asked (another may).
    package var isTransactionNotFound: Bool {
        storeCode == String(AppleAPIErrorCode.transactionIDNotFound.rawValue)
    }

    /// Apple knows no app transaction for the customer in the environment asked.
    package var isAppTransactionNotFound: Bool {
        storeCode == String(AppleAPIErrorCode.appTransactionNotFound.rawValue)
    }
}

/// The App Store Server API's answers as the shared `StoreAPIError`: which status is which kind.
/// Apple's own `errorCode` and `errorMessage` are kept in the message, as Apple worded them.
enum AppleAPIErrors {
    static let store = "Apple"
    static let keyFix = "check RECEIPTGATE_APPSTORE_API_KEY_ID, _ISSUER_ID and _KEY_PATH"

    /// Apple answered `status` (not a success), with its `errorCode` and `errorMessage` when it sent them.
    static func answered(
        _ status: HTTPStatus, errorCode: Int?, errorMessage: String?, retryAfter: Duration?
    ) -> StoreAPIError {
        let message =
            "App Store Server API error \(status) \(errorCode.map(String.init) ?? ""): \(errorMessage ?? "")"
        let code = errorCode.map(String.init)
        if status == .tooManyRequests || status.isServerError {
            return StoreAPIError(
                .unavailable, store: store, reason: "STORE_UNAVAILABLE", message, status: status.rawValue,
                storeCode: code, retryAfter: retryAfter)
        }
        switch status {
        case .unauthorized, .forbidden:
            return StoreAPIError(
                .credentialsRefused, store: store, reason: "APP_STORE_MISCONFIGURED", message, status: status.rawValue,
                storeCode: code, fix: keyFix)
        case .notFound:
            return StoreAPIError(
                .notFound, store: store, reason: "RECEIPT_NOT_CONFIRMED", message, status: status.rawValue,
                storeCode: code)
        default:
            return refused(message, status: status, storeCode: code)
        }
    }

    /// Apple could not be asked (no answer, after the retries).
    static func unreachable(_ detail: String) -> StoreAPIError {
        StoreAPIError(
            .unavailable, store: store, reason: "STORE_UNAVAILABLE", "App Store Server API unreachable: \(detail)")
    }

    /// A request Apple would refuse, not sent (an id it never issues).
    static func refused(_ message: String, status: HTTPStatus, storeCode: String? = nil) -> StoreAPIError {
        StoreAPIError(
            .refused, store: store, reason: "RECEIPT_NOT_CONFIRMED", message, status: status.rawValue,
            storeCode: storeCode)
    }

    /// An answer that is not Apple's (a body that does not decode, paging that never ends), or a
    /// request that could not be encoded.
    static func malformed(_ detail: String) -> StoreAPIError {
        StoreAPIError(.malformedAnswer, store: store, reason: "STORE_INVALID_RESPONSE", detail)
    }

    /// The request's token could not be signed with the configured key.
    static func keyUnusable(_ detail: String) -> StoreAPIError {
        StoreAPIError(.notConfigured, store: store, reason: "APP_STORE_MISCONFIGURED", detail, fix: keyFix)
    }
}
