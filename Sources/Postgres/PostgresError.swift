/// Every Postgres-module failure. `code` is stable; `sqlState` is the server's SQLSTATE when the
/// server answered. Messages never contain parameter values (they may be secrets).
package struct PostgresError: Error, CustomStringConvertible, Sendable, Equatable {
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        package let rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// Could not connect, or the connection broke. Retryable.
        package static let connectionFailed = Code(rawValue: "CONNECTION_FAILED")
        /// The server refused a statement (syntax, constraint, permission...).
        package static let queryFailed = Code(rawValue: "QUERY_FAILED")
        /// A parameter Postgres cannot take as given (a NUL in text): the caller's input, not the database.
        package static let invalidParameter = Code(rawValue: "INVALID_PARAMETER")
        /// A column held something the requested Swift type cannot represent.
        package static let decodingFailed = Code(rawValue: "DECODING_FAILED")
        /// The pool was shut down.
        package static let poolClosed = Code(rawValue: "POOL_CLOSED")
        /// No connection was free within the pool's lease timeout (every one busy or stuck). Retryable.
        package static let poolTimeout = Code(rawValue: "POOL_TIMEOUT")
        /// Starting or stopping an embedded cluster failed.
        package static let clusterFailed = Code(rawValue: "CLUSTER_FAILED")
    }

    package let code: Code
    package let message: String
    package let sqlState: String?

    package init(_ code: Code, _ message: String, sqlState: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
    }

    package var description: String {
        sqlState.map { "\(code) [\($0)]: \(message)" } ?? "\(code): \(message)"
    }

    /// Worth retrying on a fresh connection.
    package var isRetryable: Bool {
        code == .connectionFailed || code == .poolTimeout || sqlState == "40001" || sqlState == "40P01"
            || sqlState?.hasPrefix("08") == true
            || sqlState == "57P01" || sqlState == "25006"
    }

    /// A unique constraint was violated (SQLSTATE 23505).
    package var isUniqueViolation: Bool { sqlState == "23505" }

    package static func == (lhs: PostgresError, rhs: PostgresError) -> Bool {
        lhs.code == rhs.code && lhs.sqlState == rhs.sqlState
    }
}
