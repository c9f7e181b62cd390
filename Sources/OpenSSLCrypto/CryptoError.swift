/// The error every Crypto API throws. `code` is stable; `message` is for humans and never holds
/// key material. Equality compares codes only.
public struct CryptoError: Error, Equatable, CustomStringConvertible, Sendable {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidEncoding = Code(rawValue: "INVALID_ENCODING")
        public static let invalidKey = Code(rawValue: "INVALID_KEY")
        package static let invalidSignature = Code(rawValue: "INVALID_SIGNATURE")
        public static let invalidCertificate = Code(rawValue: "INVALID_CERTIFICATE")
        public static let chainInvalid = Code(rawValue: "CHAIN_INVALID")
        package static let authenticationFailed = Code(rawValue: "AUTHENTICATION_FAILED")
        package static let malformedJWS = Code(rawValue: "MALFORMED_JWS")
        public static let unsupportedAlgorithm = Code(rawValue: "UNSUPPORTED_ALGORITHM")
        package static let openSSLFailure = Code(rawValue: "OPENSSL_FAILURE")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: CryptoError, rhs: CryptoError) -> Bool { lhs.code == rhs.code }
}
