/// Every Postgres-module failure. `code` is stable; `sqlState` is the server's SQLSTATE when the
/// server answered. Messages never contain parameter values (they may be secrets).
public struct PostgresError: Error, CustomStringConvertible, Sendable, Equatable {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Could not connect, or the connection broke. Retryable.
        public static let connectionFailed = Code(rawValue: "CONNECTION_FAILED")
        /// The server refused a statement (syntax, constraint, permission...).
        public static let queryFailed = Code(rawValue: "QUERY_FAILED")
        /// A parameter Postgres cannot take as given (a NUL in text): the caller's input, not the database.
        public static let invalidParameter = Code(rawValue: "INVALID_PARAMETER")
        /// A column held something the requested Swift type cannot represent.
        public static let decodingFailed = Code(rawValue: "DECODING_FAILED")
        /// The pool was shut down.
        public static let poolClosed = Code(rawValue: "POOL_CLOSED")
        /// No connection was free within the pool's lease timeout (every one busy or stuck). Retryable.
        public static let poolTimeout = Code(rawValue: "POOL_TIMEOUT")
        /// Starting or stopping an embedded cluster failed.
        public static let clusterFailed = Code(rawValue: "CLUSTER_FAILED")
    }

    public let code: Code
    public let message: String
    public let sqlState: String?

    public init(_ code: Code, _ message: String, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    public var description: String {
        sqlState.map { "\(code) [\($0)]: \(message)" } ?? "\(code): \(message)"
    }

    /// Worth retrying on a fresh connection.
    public var isRetryable: Bool {
        code == .connectionFailed || code == .poolTimeout || sqlState == "40001" || sqlState == "40P01" || sqlState?.hasPrefix("08") == true
            || sqlState == "57P01" || sqlState == "25006"
    }

    /// A unique constraint was violated (SQLSTATE 23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }

    public static func == (lhs: PostgresError, rhs: PostgresError) -> Bool {
        lhs.code == rhs.code && lhs.sqlState == rhs.sqlState
    }
}
