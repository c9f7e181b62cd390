/// The stable error codes every API speaks (DESIGN.md). Dialects map them to their own HTTP
/// statuses and names, each in one table.
public enum ErrorCode: String, Sendable, CaseIterable, Codable {
    case missingFields = "MISSING_FIELDS"
    case invalidField = "INVALID_FIELD"
    case unauthorized = "UNAUTHORIZED"
    case productMismatch = "PRODUCT_MISMATCH"
    case bundleMismatch = "BUNDLE_MISMATCH"
    case environmentMismatch = "ENVIRONMENT_MISMATCH"
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
