import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore

/// Opaque tokens (`TokenStore` for dialects): random, shown once, stored only as SHA-256. A token
/// works only while its client is enabled and was issued after the client's last secret rotation.
struct TokenRepository: TokenStore {
    let pool: PostgresPool

    func issue(_ request: TokenRequest) async throws -> IssuedToken {
        try await pool.withConnection { try Self.issue(request, family: UUID().uuidString.lowercased(), on: $0) }
    }

    func resolve(_ token: String, kind: String) async throws -> StoredToken? {
        let digest = try Self.digest(token)
        return try await pool.query(
            """
            SELECT \(unescaped: Self.columns) FROM tokens t JOIN clients c ON c.id = t.client_id
            WHERE t.token_sha256 = \(digest) AND \(Self.usable(kind: kind))
            """
        ).first.map(Self.decode)
    }

    func rotate(_ token: String, kind: String, lifetime: Duration) async throws -> TokenRotation {
        let digest = try Self.digest(token)
        return try await pool.withTransaction { connection in
            let spent = try connection.query(
                """
                UPDATE tokens t SET spent_at = clock_timestamp() FROM clients c
                WHERE c.id = t.client_id AND t.token_sha256 = \(digest) AND \(Self.usable(kind: kind))
                RETURNING \(unescaped: Self.columns)
                """)
            if let row = spent.first {
                let old = try Self.decode(row)
                let request = TokenRequest(
                    kind: kind, clientID: old.clientID, accountID: old.accountID, lifetime: lifetime,
                    payload: old.payload)
                return .rotated(try Self.issue(request, family: old.family, on: connection))
            }
            // Presented again after it was spent: someone holds a copy. Revoke the whole family.
            let reused = try connection.query(
                """
                UPDATE tokens SET revoked_at = COALESCE(revoked_at, clock_timestamp())
                WHERE family = (SELECT family FROM tokens WHERE token_sha256 = \(digest) AND kind = \(kind) AND spent_at IS NOT NULL)
                RETURNING family
                """)
            return reused.isEmpty ? .invalid : .reused
        }
    }

    func consume(_ token: String, kind: String) async throws -> StoredToken? {
        let digest = try Self.digest(token)
        return try await pool.query(
            """
            UPDATE tokens t SET spent_at = clock_timestamp() FROM clients c
            WHERE c.id = t.client_id AND t.token_sha256 = \(digest) AND \(Self.usable(kind: kind))
            RETURNING \(unescaped: Self.columns)
            """
        ).first.map(Self.decode)
    }

    func revokeFamily(_ family: String) async throws {
        try await pool.execute(
            "UPDATE tokens SET revoked_at = COALESCE(revoked_at, clock_timestamp()) WHERE family = \(family)")
    }

    /// Forgets tokens that expired more than a day ago (kept a while so reuse is still detected).
    func removeExpired() async throws {
        try await pool.execute("DELETE FROM tokens WHERE expires_at < now() - interval '1 day'")
    }

    // MARK: -

    private static func issue(
        _ request: TokenRequest, family: String, on connection: PostgresConnection
    ) throws -> IssuedToken {
        let token = "rgt_" + Base64.urlEncode(SecureRandom.bytes(32))
        let seconds =
            Double(request.lifetime.components.seconds) + Double(request.lifetime.components.attoseconds) / 1e18
        let tokenDigest = try digest(token)
        let values: PostgresQuery = """
            \(tokenDigest), \(request.kind), \(request.clientID), \(request.accountID), \(family), \(request.payload),
            clock_timestamp() + make_interval(secs => \(seconds))
            """
        let rows: [PostgresRow]
        if let version = request.clientVersion {
            // One statement: the row is stored only while the client is enabled at the version that
            // authenticated. FOR SHARE waits for a rotation or disable still being committed and then
            // re-reads the row (so its new version excludes it); without the lock, the token would be
            // stored after the rotation's timestamp and stay valid past it.
            rows = try connection.query(
                """
                INSERT INTO tokens AS t (token_sha256, kind, client_id, account_id, family, payload, expires_at)
                SELECT \(values) FROM clients c
                WHERE c.id = \(request.clientID) AND c.version = \(version) AND c.disabled_at IS NULL
                FOR SHARE OF c
                RETURNING \(unescaped: columns)
                """)
            guard !rows.isEmpty else { throw ClientChangedSinceAuthentication(clientID: request.clientID) }
        } else {
            rows = try connection.query(
                """
                INSERT INTO tokens AS t (token_sha256, kind, client_id, account_id, family, payload, expires_at)
                VALUES (\(values))
                RETURNING \(unescaped: columns)
                """)
        }
        guard let row = rows.first else { throw PostgresError(.queryFailed, "token insert returned no row") }
        return IssuedToken(token: token, stored: try decode(row))
    }

    /// Valid now: right kind, unexpired, unrevoked, unspent, client enabled and not rotated since.
    private static func usable(kind: String) -> PostgresQuery {
        """
        t.kind = \(kind) AND t.revoked_at IS NULL AND t.spent_at IS NULL AND t.expires_at > clock_timestamp()
        AND c.disabled_at IS NULL AND t.created_at >= c.secret_rotated_at
        """
    }

    static func digest(_ token: String) throws -> Data { try SHA256.hash(Data(token.utf8)) }

    static let columns = "t.kind, t.client_id, t.account_id, t.family, t.payload, t.expires_at"

    static func decode(_ row: PostgresRow) throws -> StoredToken {
        StoredToken(
            kind: try row.decode("kind"), clientID: try row.decode("client_id"),
            accountID: try row.decode("account_id"),
            family: try row.decode("family"), payload: try row.decode("payload"),
            expiresAt: try row.decode("expires_at"))
    }
}
