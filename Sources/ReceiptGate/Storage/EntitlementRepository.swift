import Foundation
import Postgres
import ReceiptCore

/// Reading what players own (the index `EntitlementIndex` keeps), and the work that keeps it
/// current outside a ledger write: the expiry sweep and a catalog change's refresh.
struct EntitlementRepository: Sendable {
    let pool: PostgresPool
    /// Where reads go (the read standby while it is fresh enough), in groups.
    private let batcher: EntitlementReadBatcher

    init(pool: PostgresPool, reads: LedgerReads? = nil) {
        self.pool = pool
        batcher = EntitlementReadBatcher(reads: reads ?? LedgerReads(primary: pool))
    }

    /// What the player owns now under the client's catalog, by entitlement name. One index range:
    /// rows past their end (the sweep not yet run) are left out here.
    func owned(by playerID: String, client: ClientInfo, at now: Date = Date()) async throws -> [EntitlementGrant] {
        let environments = client.environments
        return try await batcher.rows(client: client.clientID, player: playerID).filter {
            environments.contains($0.environment) && EntitlementRules.holds(expires: $0.expiresDate, grace: $0.gracePeriodExpiresDate, at: now)
        }
    }

    /// Removes grants whose end (and grace) passed, each told as `entitlement.expired`: a player
    /// loses an entitlement on time even when no store says so. A player at a time (under the
    /// refresh's lock), at most `limit` per call; the number of players refreshed.
    @discardableResult
    func sweepExpired(limit: Int = 500) async throws -> Int {
        let due = try await pool.query("""
            SELECT DISTINCT pe.client_id, c.game_id, pe.player_id FROM player_entitlements pe JOIN clients c ON c.id = pe.client_id
            WHERE pe.expires_date IS NOT NULL AND GREATEST(pe.expires_date, pe.grace_period_expires_date) <= now()
            LIMIT \(limit)
            """).map { (EntitlementIndex.Catalog(clientID: try $0.decode("client_id"), gameID: try $0.decode("game_id")),
                        try $0.decode("player_id", as: String.self)) }
        for (catalog, player) in due {
            try await pool.withTransaction { try EntitlementIndex.refresh([player], catalog: catalog, on: $0) }
        }
        return due.count
    }

    /// After a change of the catalog of `clientID` for one product: refreshes every player who
    /// holds the product or an entitlement it granted, `chunk` players per transaction (so a large
    /// game is not locked at once). Returns how many players were refreshed.
    @discardableResult
    func refreshProduct(client clientID: String, store: String, product: String, chunk: Int = 1000) async throws -> Int {
        guard let catalog = try await pool.query("SELECT id, game_id FROM clients WHERE id = \(clientID)").first
            .map({ EntitlementIndex.Catalog(clientID: try $0.decode("id"), gameID: try $0.decode("game_id")) }) else { return 0 }
        let visible = LedgerSQL.visible(owner: "t", callerClient: "\(catalog.clientID)", callerGame: "\(catalog.gameID)")
        let players = try await pool.query("""
            WITH game AS (
                SELECT c.id FROM clients c WHERE c.id = \(catalog.clientID) OR (\(catalog.gameID)::bigint IS NOT NULL AND c.game_id = \(catalog.gameID))
            ), purchases AS (
                SELECT t.store, t.environment, COALESCE(t.original_transaction_id, t.transaction_id) AS original FROM transactions t
                WHERE t.client_id IN (SELECT id FROM game) AND t.store = \(store) AND t.product_id = \(product) AND \(visible)
                UNION SELECT s.store, s.environment, s.original_transaction_id FROM subscriptions s
                WHERE s.client_id IN (SELECT id FROM game) AND s.store = \(store) AND s.product_id = \(product)
            )
            SELECT DISTINCT t.player_id FROM purchases p
            CROSS JOIN LATERAL \(unescaped: EntitlementIndex.purchaseRows(store: "p.store", environment: "p.environment", original: "p.original")) t
            WHERE t.claimed_at IS NOT NULL AND t.player_id IS NOT NULL AND \(visible)
            UNION SELECT l.account_id FROM account_links l JOIN purchases p ON p.store = l.store AND p.original = l.original_transaction_id
            WHERE l.scope = \(catalog.scope)
            UNION SELECT player_id FROM player_entitlements WHERE client_id = \(catalog.clientID) AND store = \(store) AND product_id = \(product)
            """).map { try $0.decode("player_id", as: String.self) }.sorted()
        var start = 0
        while start < players.count {
            let slice = Array(players[start..<min(start + chunk, players.count)])
            try await pool.withTransaction { try EntitlementIndex.refresh(slice, catalog: catalog, on: $0) }
            start += chunk
        }
        return players.count
    }
}
