import Foundation
import Postgres
import ReceiptCore

/// Orders the writes that decide under a catalog (claims, store events, account links) against
/// the changes of that catalog, per scope: a game, or a client that has none (`ClientInfo.scope`,
/// the set of catalogs one claim may grant under). Transaction-scoped advisory locks: a claim
/// holds its scope shared from before it checks its client's version (and so its catalog) to its
/// commit; a change holds it exclusive from before it writes to its commit.
///
/// Advisory locks, not the client rows: Postgres queues them fairly (a claim that arrives while a
/// change waits queues behind it, so a busy game cannot starve a change), and they are apart from
/// the row locks that foreign keys take (a claim writing another client's index rows never waits
/// for a change of that client). A change waits at most `changeTimeout` and then gives up (safe to
/// retry), which also bounds how long the claims queued behind it wait.
enum CatalogScopeLock {
    /// The lock class, the first key of the two-key form: apart from the index's per-player locks
    /// (`EntitlementIndex.lockSpace`) and the migrator's one-key lock (another key space).
    static let lockClass: Int32 = 0x5247_4341  // "RGCA"
    /// How long a change waits for the claims in flight of its scopes.
    static let changeTimeout = "5s"

    /// Holds `scope` shared until the transaction ends (a claim, a store event); waits for a
    /// change that holds it or asked first. Statements after this one see the change's commit.
    static func share(_ scope: String, on connection: PostgresConnection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock_shared(\(lockClass), hashtext(\(scope)))")
    }

    /// Holds the scope of `clientID` as it is now shared (a store event, which reads its client in
    /// its own transaction): once held, reads the scope again, in case the client moved game
    /// while this waited, and holds the new one too.
    static func shareScope(of clientID: String, on connection: PostgresConnection) throws {
        var held: Set<String> = []
        while let scope = try scope(of: clientID, on: connection), !held.contains(scope) {
            try share(scope, on: connection)
            held.insert(scope)
        }
    }

    /// Of `scopes`, those held shared now without waiting (the group-commit batch: a claim whose
    /// scope a change holds or waits for goes the ordinary way and waits alone, so the batch, and
    /// every tenant's claims in it, never waits for one game's change).
    /// Prepared once per connection: it runs once per batch, and planning it would cost Postgres
    /// more than running it.
    static func tryShare(_ scopes: [String], on connection: PostgresConnection) throws -> Set<String> {
        Set(
            try connection.query(
                """
                SELECT s FROM unnest(\(Array(Set(scopes)).sorted())::text[]) s WHERE pg_try_advisory_xact_lock_shared(\(lockClass), hashtext(s))
                """, preparedAs: "receiptgate_try_share_scopes"
            ).map { try $0.decode("s", as: String.self) })
    }

    /// Holds `scopes` exclusive until the transaction ends (a catalog change; a client moving
    /// game holds both games), in one order so two changes never deadlock; waits for the claims
    /// in flight of each at most `changeTimeout`, then fails with 55P03 (safe to retry); the rest
    /// of the change's transaction waits no longer for any lock, since claims queue behind it.
    /// Must be the change's first lock: it waits holding nothing a claim may need.
    static func hold(_ scopes: [String], on connection: PostgresConnection) throws {
        try connection.execute("SET LOCAL lock_timeout = '\(unescaped: changeTimeout)'")
        try connection.execute(
            """
            SELECT pg_advisory_xact_lock(\(lockClass), k) FROM (SELECT DISTINCT hashtext(s) AS k FROM unnest(\(scopes)::text[]) s ORDER BY 1) keys
            """)
    }

    /// The scope of `clientID` as committed now (nil for an unknown client).
    static func scope(of clientID: String, on connection: PostgresConnection) throws -> String? {
        try connection.query(
            """
            SELECT CASE WHEN game_id IS NULL THEN 'client:' || id ELSE 'game:' || game_id END AS scope FROM clients WHERE id = \(clientID)
            """
        ).first.map { try $0.decode("scope", as: String.self) }
    }
}
