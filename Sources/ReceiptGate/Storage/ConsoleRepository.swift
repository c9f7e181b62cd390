import Foundation
import Postgres

/// The console's sessions and its audit log.
struct ConsoleRepository: Sendable {
    let pool: PostgresPool

    func openSession(cookieDigest: String, label: String, tokenMark: String, lifetime: Int) async throws {
        try await pool.withTransaction { connection in
            _ = try connection.execute("DELETE FROM console_sessions WHERE expires_at < now()")
            _ = try connection.execute(
                """
                INSERT INTO console_sessions (cookie_sha256, label, admin_token_mark, expires_at)
                VALUES (\(cookieDigest), \(label), \(tokenMark), now() + make_interval(secs => \(lifetime)))
                """)
        }
    }

    /// The session's label, when it exists, has not expired and was opened with the current admin token.
    func sessionLabel(cookieDigest: String, tokenMark: String) async throws -> String? {
        try await pool.query(
            """
            SELECT label FROM console_sessions
            WHERE cookie_sha256 = \(cookieDigest) AND admin_token_mark = \(tokenMark) AND expires_at > now()
            """
        ).first.map { try $0.decode("label") }
    }

    func closeSession(cookieDigest: String) async throws {
        _ = try await pool.execute("DELETE FROM console_sessions WHERE cookie_sha256 = \(cookieDigest)")
    }

    struct AuditEntry: Sendable {
        let at: Date, who: String, action: String, target: String
    }

    func audit(who: String, action: String, target: String) async throws {
        try await pool.withConnection { try Self.audit(who: who, action: action, target: target, on: $0) }
    }

    /// The audit row inside the caller's transaction: it commits with the change it tells of, or neither does.
    static func audit(who: String, action: String, target: String, on connection: PostgresConnection) throws {
        _ = try connection.execute(
            "INSERT INTO console_audit (who, action, target) VALUES (\(who), \(action), \(String(target.prefix(500))))")
    }

    func auditLog(limit: Int = 200) async throws -> [AuditEntry] {
        try await pool.query("SELECT at, who, action, target FROM console_audit ORDER BY id DESC LIMIT \(limit)").map {
            row in
            AuditEntry(
                at: try row.decode("at"), who: try row.decode("who"), action: try row.decode("action"),
                target: try row.decode("target"))
        }
    }
}
