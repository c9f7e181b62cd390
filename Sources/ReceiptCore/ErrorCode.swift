/// The stable error codes every API speaks (docs/architecture.md). Dialects map them to their own HTTP
/// statuses and names, each in one table.
public enum ErrorCode: String, Sendable, CaseIterable, Codable {
    case missingFields = "MISSING_FIELDS"
    case invalidField = "INVALID_FIELD"
    case unauthorized = "UNAUTHORIZED"
    /// Authenticated, but not allowed this (a wrong app id for a token's client).
    case forbidden = "FORBIDDEN"
    case productMismatch = "PRODUCT_MISMATCH"
    case bundleMismatch = "BUNDLE_MISMATCH"
    case environmentMismatch = "ENVIRONMENT_MISMATCH"
    /// The evidence's account token contradicts the caller's and the client refuses mismatches.
    case accountMismatch = "ACCOUNT_MISMATCH"
    case verificationFailed = "VERIFICATION_FAILED"
    case duplicateTransaction = "DUPLICATE_TRANSACTION"
    case verifierError = "VERIFIER_ERROR"
    case rateLimited = "RATE_LIMITED"
    case notFound = "NOT_FOUND"
    case payloadTooLarge = "PAYLOAD_TOO_LARGE"
}

/// The environments a store separates purchases into.
public enum StoreEnvironment: String, Sendable, CaseIterable, Codable, Hashable {
    case production
    case sandbox
}
