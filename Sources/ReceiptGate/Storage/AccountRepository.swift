import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore

/// End-user accounts and the purchases linked to them (`AccountStore` for dialects). A purchase
/// belongs to at most one account per game: the primary key of `account_links` decides, under
/// any concurrency.
struct AccountRepository: AccountStore {
    let pool: PostgresPool

    func create(_ draft: AccountDraft) async throws -> AccountRecord {
        try await pool.withConnection { try Self.create(draft, on: $0) }
    }

    func account(id: String) async throws -> AccountRecord? {
        try await pool.query("SELECT \(unescaped: Self.columns) FROM accounts WHERE id = \(id)").first.map(Self.decode)
    }

    func account(username: String, scope: String) async throws -> AccountRecord? {
        try await pool.query(
            "SELECT \(unescaped: Self.columns) FROM accounts WHERE scope = \(scope) AND username = \(username)"
        )
        .first.map(Self.decode)
    }

    func account(email: String, scope: String) async throws -> AccountRecord? {
        try await pool.query(
            """
            SELECT \(unescaped: Self.columns) FROM accounts WHERE scope = \(scope) AND lower(email) = lower(\(email))
            ORDER BY email_verified DESC, created_at LIMIT 1
            """
        ).first.map(Self.decode)
    }

    func linkedAccount(_ key: PurchaseKey, scope: String) async throws -> AccountRecord? {
        try await pool.withConnection { try Self.linkedAccount(key, scope: scope, on: $0) }
    }

    func links(accountID: String) async throws -> [PurchaseKey] {
        try await pool.query(
            "SELECT store, original_transaction_id FROM account_links WHERE account_id = \(accountID) ORDER BY created_at"
        )
        .map {
            PurchaseKey(
                store: StoreID(rawValue: try $0.decode("store")),
                originalTransactionID: try $0.decode("original_transaction_id"))
        }
    }

    func update(_ accountID: String, _ change: AccountChange) async throws -> AccountRecord? {
        let expected = change.expected
        return try await pool.query(
            """
            UPDATE accounts SET
                email = COALESCE(\(change.email), email),
                email_verified = COALESCE(\(change.emailVerified), email_verified),
                pending_email = CASE WHEN \(change.pendingEmail != nil) THEN \(change.pendingEmail ?? nil) ELSE pending_email END,
                pending_email_approved = COALESCE(\(change.pendingEmailApproved), pending_email_approved),
                password_hash = COALESCE(\(change.passwordHash), password_hash),
                updated_at = now()
            WHERE id = \(accountID)
              AND (NOT \(expected != nil) OR (email IS NOT DISTINCT FROM \(expected?.email) AND email_verified = \(expected?.emailVerified ?? false)
                   AND pending_email IS NOT DISTINCT FROM \(expected?.pendingEmail) AND pending_email_approved = \(expected?.pendingEmailApproved ?? false)))
            RETURNING \(unescaped: Self.columns)
            """
        ).first.map(Self.decode)
    }

    // MARK: - Inside a caller's transaction

    static func create(_ draft: AccountDraft, on connection: PostgresConnection) throws -> AccountRecord {
        let id = draft.id ?? "acc_" + Hex.encode(SecureRandom.bytes(12))
        let attribution = draft.attribution.map { String(decoding: $0, as: UTF8.self) }
        let rows = try connection.query(
            """
            INSERT INTO accounts (id, client_id, scope, username, email, password_hash, attribution)
            VALUES (\(id), \(draft.client.clientID), \(draft.client.scope), \(draft.username), \(draft.email), \(draft.passwordHash),
                    \(attribution)::jsonb)
            RETURNING \(unescaped: columns)
            """)
        guard let row = rows.first else { throw PostgresError(.queryFailed, "account insert returned no row") }
        return try decode(row)
    }

    /// Links unless linked; returns the account the purchase is linked to. Two statements on
    /// purpose: the second sees a link another transaction committed while the first waited.
    static func link(_ key: PurchaseKey, to accountID: String, on connection: PostgresConnection) throws -> String {
        try connection.execute(
            """
            INSERT INTO account_links (scope, store, original_transaction_id, account_id)
            SELECT scope, \(key.store.rawValue), \(key.originalTransactionID), id FROM accounts WHERE id = \(accountID)
            ON CONFLICT (scope, store, original_transaction_id) DO NOTHING
            """)
        let rows = try connection.query(
            """
            SELECT l.account_id FROM account_links l JOIN accounts a ON a.scope = l.scope
            WHERE a.id = \(accountID) AND l.store = \(key.store.rawValue) AND l.original_transaction_id = \(key.originalTransactionID)
            """)
        guard let row = rows.first else { throw PostgresError(.queryFailed, "no account \(accountID) to link to") }
        return try row.decode("account_id")
    }

    static func linkedAccount(
        _ key: PurchaseKey, scope: String, on connection: PostgresConnection
    ) throws -> AccountRecord? {
        try connection.query(
            """
            SELECT \(unescaped: columns) FROM accounts
            WHERE id = (SELECT account_id FROM account_links WHERE scope = \(scope) AND store = \(key.store.rawValue)
                        AND original_transaction_id = \(key.originalTransactionID))
            """
        ).first.map(decode)
    }

    static let columns = """
        id, client_id, scope, username, app_account_token::text AS app_account_token, email, email_verified, pending_email, pending_email_approved, password_hash,
        attribution::text AS attribution, created_at
        """

    static func decode(_ row: PostgresRow) throws -> AccountRecord {
        AccountRecord(
            id: try row.decode("id"), clientID: try row.decode("client_id"), scope: try row.decode("scope"),
            username: try row.decode("username"), appAccountToken: try row.decode("app_account_token"),
            email: try row.decode("email"), emailVerified: try row.decode("email_verified"),
            pendingEmail: try row.decode("pending_email"),
            pendingEmailApproved: try row.decode("pending_email_approved"),
            passwordHash: try row.decode("password_hash"),
            attribution: try row.decode("attribution", as: String?.self).map { Data($0.utf8) },
            createdAt: try row.decode("created_at"))
    }
}

/// The database transaction a purchase is recorded in, as `RecordScope` for dialects.
struct PostgresRecordScope: RecordScope {
    let connection: PostgresConnection
    let client: ClientInfo
    let secrets: SecretBox

    func enqueue(_ message: OutboxMessage) throws {
        try OutboxRepository.enqueue(message, sealingMailWith: secrets, on: connection)
    }

    /// Links, and the account then owns what the purchase grants under each catalog of the game.
    func linkPurchase(_ key: PurchaseKey, to accountID: String) throws -> String {
        let owner = try AccountRepository.link(key, to: accountID, on: connection)
        for catalog in try EntitlementIndex.catalogs(ofGameOf: client.clientID, on: connection) {
            try EntitlementIndex.refresh([owner], catalog: catalog, on: connection)
        }
        return owner
    }

    func linkedAccount(_ key: PurchaseKey) throws -> AccountRecord? {
        try AccountRepository.linkedAccount(key, scope: client.scope, on: connection)
    }

    func createAccount(_ draft: AccountDraft) throws -> AccountRecord {
        try AccountRepository.create(draft, on: connection)
    }

    func setPendingEmail(_ email: String?, accountID: String) throws {
        try connection.execute(
            """
            UPDATE accounts SET pending_email = \(email), pending_email_approved = false, updated_at = now() WHERE id = \(accountID)
            """)
    }

    /// Whether the store can be told at all is the pipeline's to know: it hands a dialect a scope
    /// that queues nothing for a store without the capability (`UntellableStoreScope`).
    func tellStore(accountToken: String, for transaction: TransactionRecord) throws -> Bool {
        guard let assignment = AccountTokenAssignment.owed(for: transaction, accountToken: accountToken) else {
            return false
        }
        return try OutboxRepository.enqueue(assignment, on: connection)
    }
}
