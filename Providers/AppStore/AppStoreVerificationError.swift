package import ReceiptCore

/// Why App Store evidence was refused. `reason` is a stable code naming the rule that failed;
/// `errorCode` is the shared code dialects map to HTTP. Only `revocationCheckUnavailable` is
/// retryable: a forged token is never a server error.
public struct AppStoreVerificationError: Error, Equatable, Sendable, CustomStringConvertible {
    public struct Reason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not three strict base64url segments, or a header/payload that is not JSON.
        public static let malformed = Reason(rawValue: "JWS_MALFORMED")
        /// Header `alg` is not ES256.
        package static let unsupportedAlgorithm = Reason(rawValue: "JWS_ALGORITHM_NOT_ES256")
        /// `x5c` missing or not exactly three certificates.
        package static let invalidChainLength = Reason(rawValue: "X5C_CHAIN_LENGTH")
        /// An `x5c` entry is not a base64 DER certificate.
        package static let invalidCertificate = Reason(rawValue: "X5C_CERTIFICATE_INVALID")
        /// The chain does not lead to a configured root, or a certificate was not valid at the signing date.
        package static let chainNotTrusted = Reason(rawValue: "CERTIFICATE_CHAIN_NOT_TRUSTED")
        /// The intermediate or the leaf lacks Apple's marker extension.
        package static let missingAppleExtension = Reason(rawValue: "CERTIFICATE_MISSING_APPLE_OID")
        /// The JWS signature does not verify with the leaf's key.
        package static let signatureInvalid = Reason(rawValue: "JWS_SIGNATURE_INVALID")
        /// The payload verified but is not the expected kind of object.
        package static let payloadInvalid = Reason(rawValue: "PAYLOAD_INVALID")
        /// `bundleId` (or `appAppleId`) is not one the caller expects.
        public static let bundleMismatch = Reason(rawValue: "BUNDLE_ID_MISMATCH")
        /// `environment` is not one the caller accepts.
        public static let environmentMismatch = Reason(rawValue: "ENVIRONMENT_MISMATCH")
        /// An online revocation check could not be completed (network). Retryable.
        package static let revocationCheckUnavailable = Reason(rawValue: "REVOCATION_CHECK_UNAVAILABLE")
        /// A StoreKit 1 receipt that is not a PKCS#7 container of receipt attributes.
        package static let receiptMalformed = Reason(rawValue: "RECEIPT_MALFORMED")
        /// A StoreKit 1 receipt whose PKCS#7 signature is missing or does not cover its content.
        package static let receiptSignatureInvalid = Reason(rawValue: "RECEIPT_SIGNATURE_INVALID")
        /// Apple does not confirm the receipt or its transactions.
        package static let receiptNotConfirmed = Reason(rawValue: "RECEIPT_NOT_CONFIRMED")
        /// Apple could not be asked (unreachable, rate limited, server error). Retryable.
        package static let storeUnavailable = Reason(rawValue: "STORE_UNAVAILABLE")
        /// ReceiptGate's own App Store configuration is wrong (e.g. the shared secret).
        package static let misconfigured = Reason(rawValue: "APP_STORE_MISCONFIGURED")
        /// A certificate in the chain has been revoked.
        package static let certificateRevoked = Reason(rawValue: "CERTIFICATE_REVOKED")
        /// A request to Apple could not be encoded: nothing was sent (a fault of ours, not the evidence's).
        package static let requestNotEncodable = Reason(rawValue: "APP_STORE_REQUEST_NOT_ENCODABLE")
    }

    public let reason: Reason
    public let message: String

    package init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    package var errorCode: ErrorCode {
        switch reason {
        case .bundleMismatch: .bundleMismatch
        case .environmentMismatch: .environmentMismatch
        case .revocationCheckUnavailable, .storeUnavailable, .misconfigured, .requestNotEncodable: .verifierError
        default: .verificationFailed
        }
    }

    public var isRetryable: Bool { reason == .revocationCheckUnavailable || reason == .storeUnavailable }

    public var description: String { "\(reason): \(message)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.reason == rhs.reason }
}
