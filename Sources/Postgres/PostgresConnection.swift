import CLibPQ
import Foundation

/// One libpq connection. Its calls block, so it is only ever used on a thread the pool owns,
/// inside `PostgresPool.withConnection` / `withTransaction`; it is deliberately not Sendable.
package final class PostgresConnection {
    private var handle: OpaquePointer?
    /// Statements this connection has prepared, by name, with the text each was prepared from.
    private var prepared: [String: String] = [:]
    /// Prepared statements refused inside a transaction with "cached plan must not change result
    /// type": prepared again at their next use, once that transaction is over.
    private var stale: Set<String> = []

    /// Connects with a libpq connection string (URI or key=value). The session is pinned to UTC
    /// and ISO dates so timestamps decode one way.
    init(connectionString: String, connectTimeoutSeconds: Int, statementTimeoutMilliseconds: Int) throws {
        // Ours come first so that settings inside the caller's connection string win.
        let settings: [(String, String)] = [
            ("connect_timeout", String(connectTimeoutSeconds)),
            // The pid lets an embedded cluster tell whether another process still uses it.
            ("application_name", "receiptgate/\(getpid())"),
            ("client_encoding", "UTF8"),
            // No JIT: every statement here is short, and compiling a plan (seconds, for a large
            // one) costs far more than it could save.
            (
                "options",
                "-c TimeZone=UTC -c DateStyle=ISO -c client_min_messages=warning -c jit=off -c statement_timeout=\(statementTimeoutMilliseconds)"
            ),
            ("dbname", connectionString),
        ]
        let keywords = settings.map { strdup($0.0) }
        let values = settings.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keywordPointers = keywords.map { UnsafePointer($0) } + [nil]
        let valuePointers = values.map { UnsafePointer($0) } + [nil]
        let connection = PQconnectdbParams(keywordPointers, valuePointers, 1)
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let reason = connection.map { Self.trimmedMessage(PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(connection)
            throw PostgresError(.connectionFailed, "cannot connect to PostgreSQL: \(reason)")
        }
        handle = connection
    }

    deinit { PQfinish(handle) }

    /// For the module's own extensions (the listener, pipelined batches).
    var rawHandle: OpaquePointer? { handle }

    /// False once the server has gone away. An idle connection has nothing to say, so a readable
    /// socket almost always means the server said goodbye (restart, admin shutdown) and closed it:
    /// such a connection is replaced before the next job rather than failing that job.
    var isHealthy: Bool {
        guard let handle, PQstatus(handle) == CONNECTION_OK else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    /// Set once the server refused a write because it no longer accepts any (SQLSTATE 25006): after
    /// a failover, a server that was primary comes back as a standby. Such a connection is replaced,
    /// so the next one finds the new primary (`target_session_attrs=read-write`).
    private(set) var refusedWrites = false

    /// When the connection was opened, and whether its holder asked for it to be replaced after
    /// the job in hand (a standby's connection that finds its server promoted: the next one, with
    /// `target_session_attrs=prefer-standby`, finds a standby again).
    package let openedAt = ContinuousClock.now
    package private(set) var retired = false
    package func retire() { retired = true }

    var isIdleOutsideTransaction: Bool {
        guard let handle else { return false }
        return PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Runs one statement with bound parameters and returns its rows.
    @discardableResult
    package func query(_ query: PostgresQuery) throws -> [PostgresRow] {
        try run(query).rows
    }

    /// Runs one statement and returns the number of rows it affected.
    @discardableResult
    package func execute(_ query: PostgresQuery) throws -> Int {
        try run(query).affected
    }

    /// Runs a statement prepared once per connection under `name`: a hot statement is then parsed
    /// and planned once per session instead of on every call. Postgres itself replans it when a
    /// table it reads changes shape or its statistics are refreshed. The same name must always
    /// carry the same text; a changed text is a programming error, refused.
    @discardableResult
    package func query(_ query: PostgresQuery, preparedAs name: String) throws -> [PostgresRow] {
        try prepare(query.sql, as: name, parameterCount: query.bindings.count)
        do {
            return try runPrepared(name, bindings: query.bindings)
        } catch let error as PostgresError where error.sqlState == "0A000" {
            // "cached plan must not change result type": another process migrated a table this
            // statement returns. Prepared again against the new shape: at once outside a
            // transaction; inside one the failure has aborted it, so the caller's error stands and
            // the statement is prepared again at its next use.
            stale.insert(name)
            guard isIdleOutsideTransaction else { throw error }
            try prepare(query.sql, as: name, parameterCount: query.bindings.count)
            return try runPrepared(name, bindings: query.bindings)
        }
    }

    private func prepare(_ sql: String, as name: String, parameterCount: Int) throws {
        guard let handle else { throw PostgresError(.connectionFailed, "connection is closed") }
        if stale.remove(name) != nil, prepared[name] != nil {
            try execute("DEALLOCATE \(unescaped: Self.quotedIdentifier(name))")
            prepared[name] = nil
        }
        if let text = prepared[name] {
            guard text == sql else {
                throw PostgresError(.queryFailed, "statement \(name) was prepared from another text")
            }
            return
        }
        let result = PQprepare(handle, name, sql, Int32(parameterCount), nil)
        defer { PQclear(result) }
        try check(result)
        prepared[name] = sql
    }

    private func runPrepared(_ name: String, bindings: [String?]) throws -> [PostgresRow] {
        guard let handle else { throw PostgresError(.connectionFailed, "connection is closed") }
        let result = try Self.withParameters(bindings) { PQexecPrepared(handle, name, $0, $1, nil, nil, 0) }
        defer { PQclear(result) }
        try check(result)
        return Self.rows(of: result)
    }

    /// Text-format parameters as libpq takes them (count, C strings, NULL for SQL NULL), valid
    /// only inside `body`. A NUL would end the C string early and bind a shorter value than the
    /// caller checked (a name with a tail cut off), and Postgres text cannot hold one anyway.
    private static func withParameters(
        _ bindings: [String?],
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?) -> OpaquePointer?
    ) throws -> OpaquePointer? {
        let parameters = bindings.map { $0.map { strdup($0) } ?? nil }
        defer { parameters.forEach { free($0) } }
        // strdup copies up to the first NUL: a copy shorter than its value means the value had one
        // (checked with libc's strlen, not byte by byte: a batch binds every webhook body it carries).
        for (binding, copy) in zip(bindings, parameters) {
            if let binding, let copy, strlen(copy) != binding.utf8.count {
                throw PostgresError(.invalidParameter, "a bound text parameter contains a NUL character")
            }
        }
        let parameterPointers = parameters.map { $0.map { UnsafePointer($0) } }
        return parameterPointers.withUnsafeBufferPointer { body(Int32($0.count), $0.baseAddress) }
    }

    private static func quotedIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Runs a script of several statements with no parameters (migrations). Never pass input.
    package func executeScript(_ sql: String) throws {
        guard let handle else { throw PostgresError(.connectionFailed, "connection is closed") }
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result)
    }

    private func run(_ query: PostgresQuery) throws -> (rows: [PostgresRow], affected: Int) {
        guard let handle else { throw PostgresError(.connectionFailed, "connection is closed") }
        let result = try Self.withParameters(query.bindings) {
            PQexecParams(handle, query.sql, $0, nil, $1, nil, nil, 0)
        }
        defer { PQclear(result) }
        try check(result)
        return (Self.rows(of: result), Int(String(cString: PQcmdTuples(result))) ?? 0)
    }

    private func check(_ result: OpaquePointer?) throws {
        guard let result else {
            throw PostgresError(.connectionFailed, Self.trimmedMessage(PQerrorMessage(handle)))
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let sqlState = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            let message = Self.trimmedMessage(PQresultErrorMessage(result))
            if sqlState == "25006" { refusedWrites = true }
            if PQstatus(handle) != CONNECTION_OK {
                throw PostgresError(.connectionFailed, message, sqlState: sqlState)
            }
            throw PostgresError(.queryFailed, message, sqlState: sqlState)
        }
    }

    private static func rows(of result: OpaquePointer?) -> [PostgresRow] {
        let rowCount = Int(PQntuples(result)), columnCount = Int(PQnfields(result))
        guard rowCount > 0 else { return [] }
        var columnIndex: [String: Int] = [:]
        for column in 0..<columnCount {
            columnIndex[String(cString: PQfname(result, Int32(column)))] = column
        }
        return (0..<rowCount).map { row in
            let values = (0..<columnCount).map { column -> String? in
                PQgetisnull(result, Int32(row), Int32(column)) == 1
                    ? nil : String(cString: PQgetvalue(result, Int32(row), Int32(column)))
            }
            return PostgresRow(columnIndex: columnIndex, values: values)
        }
    }

    private static func trimmedMessage(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown libpq error" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
