/// A failure to get any HTTP response. (A response with an error status is not an error here:
/// callers map statuses themselves.)
public struct HTTPClientError: Error, CustomStringConvertible, Sendable, Equatable {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        package static let invalidURL = Code(rawValue: "INVALID_URL")
        package static let connectFailed = Code(rawValue: "CONNECT_FAILED")
        public static let timeout = Code(rawValue: "TIMEOUT")
        /// The peer's certificate did not verify (or TLS could not be set up). Never retried.
        package static let tlsFailure = Code(rawValue: "TLS_FAILURE")
        package static let responseTooLarge = Code(rawValue: "RESPONSE_TOO_LARGE")
        public static let transport = Code(rawValue: "TRANSPORT")
        package static let clientClosed = Code(rawValue: "CLIENT_CLOSED")
        /// The destination resolved to an address the request's policy forbids. Final.
        package static let destinationRefused = Code(rawValue: "DESTINATION_REFUSED")
    }

    public let code: Code
    public let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Worth another attempt (the request may still succeed later).
    public var isRetryable: Bool {
        code == .connectFailed || code == .timeout || code == .transport
    }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: HTTPClientError, rhs: HTTPClientError) -> Bool { lhs.code == rhs.code }
}
