import Foundation
import Postgres
import ReceiptCore

/// Reading what players own (the index `EntitlementIndex` keeps), and the work that keeps it
/// current outside a ledger write: the expiry sweep and a catalog change's refresh.
///
/// A catalog change needs no wait for claims in flight: a claim holds its catalog scope (its game)
/// shared from before its version check to its commit (`CatalogScopeLock`,
/// `ClientRepository.isCurrent`), and a change holds it exclusive
/// (`ProductCatalogRepository.holdGame`). So a claim that read the old catalog committed before the
/// change did, and a later one sees the new version and reloads; a refresh any time after the
/// change's commit finds every holder.
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
    func owned(by playerID: String, client: ClientInfo, at now: Date) async throws -> [EntitlementGrant] {
        let environments = client.environments
        return try await batcher.rows(client: client.clientID, player: playerID).filter {
            environments.contains($0.environment)
                && EntitlementRules.holds(expires: $0.expiresDate, grace: $0.gracePeriodExpiresDate, at: now)
        }
    }

    /// Removes grants whose end (and grace) passed, each told as `entitlement.expired`: a player
    /// loses an entitlement on time even when no store says so. A player at a time (under the
    /// refresh's lock), at most `limit` per call; the number of players refreshed.
    @discardableResult
    func sweepExpired(limit: Int = 500) async throws -> Int {
        let due = try await pool.query(
            """
            SELECT DISTINCT c.id, c.game_id, c.environments, pe.player_id FROM player_entitlements pe JOIN clients c ON c.id = pe.client_id
            WHERE pe.expires_date IS NOT NULL AND GREATEST(pe.expires_date, pe.grace_period_expires_date) <= now()
            LIMIT \(limit)
            """
        ).map { (try EntitlementIndex.Catalog($0), try $0.decode("player_id", as: String.self)) }
        for (catalog, player) in due {
            try await pool.withTransaction { try EntitlementIndex.refresh([player], catalog: catalog, on: $0) }
        }
        return due.count
    }

    /// Whether catalogs exist but nothing is indexed yet: a ledger from before the index (or one
    /// restored without it), to build once at start.
    func needsBuilding() async throws -> Bool {
        try await pool.query(
            """
            SELECT EXISTS (SELECT 1 FROM product_entitlements) AND NOT EXISTS (SELECT 1 FROM player_entitlements) AS needed
            """)[0].decode("needed", as: Bool.self)
    }

    /// Refreshes every holder of every mapped product of `clientID` (of every client when nil);
    /// without webhooks when `announce` is off (building the index tells of nothing that changed).
    @discardableResult
    func refreshCatalogs(client clientID: String? = nil, announce: Bool = true) async throws -> Int {
        let products = try await pool.query(
            """
            SELECT DISTINCT client_id, store, product_id FROM product_entitlements WHERE \(clientID)::text IS NULL OR client_id = \(clientID)
            ORDER BY 1, 2, 3
            """
        ).map {
            (
                try $0.decode("client_id", as: String.self), try $0.decode("store", as: String.self),
                try $0.decode("product_id", as: String.self)
            )
        }
        var refreshed = 0
        for (client, store, product) in products {
            refreshed += try await refreshProduct(client: client, store: store, product: product, announce: announce)
        }
        return refreshed
    }

    /// After a change of the catalog of `clientID` for one product: refreshes every player who
    /// holds the product or an entitlement it granted, `chunk` players per transaction (so a large
    /// game is not locked at once). Returns how many players were refreshed. Throws
    /// `RefreshCutShort` when `deadline` passes or the task is cancelled, checked before the
    /// holders are looked for and between two chunks (what committed stays).
    @discardableResult
    func refreshProduct(
        client clientID: String, store: String, product: String, chunk: Int = 1000, announce: Bool = true,
        until deadline: ContinuousClock.Instant? = nil
    ) async throws -> Int {
        if RefreshCutShort.due(deadline) { throw RefreshCutShort() }
        guard
            let catalog = try await pool.query("SELECT id, game_id, environments FROM clients WHERE id = \(clientID)")
                .first
                .map(EntitlementIndex.Catalog.init)
        else { return 0 }
        let visible = LedgerSQL.visible(
            owner: "t", callerClient: "\(catalog.clientID)", callerGame: "\(catalog.gameID)")
        // An entry of one purchase option is held by the purchases of that option of its product.
        let entry = EntitlementRules.CatalogEntry(product)
        let option = entry.purchaseOptionID
        let players = try await pool.query(
            """
            WITH game AS (
                SELECT c.id FROM clients c WHERE c.id = \(catalog.clientID) OR (\(catalog.gameID)::bigint IS NOT NULL AND c.game_id = \(catalog.gameID))
            ), purchases AS (
                SELECT t.store, t.environment, COALESCE(t.original_transaction_id, t.transaction_id) AS original FROM transactions t
                WHERE t.client_id IN (SELECT id FROM game) AND t.store = \(store) AND t.product_id = \(entry.productID)
                  AND (\(option)::text IS NULL OR t.purchase_option_id = \(option)) AND \(visible)
                UNION SELECT t.store, t.environment, COALESCE(t.original_transaction_id, t.transaction_id) FROM transactions t
                WHERE t.client_id IN (SELECT id FROM game) AND t.store = \(store) AND t.commerce_items IS NOT NULL
                  AND t.commerce_items @> jsonb_build_array(jsonb_build_object('sku', \(product)::text))
                  AND \(visible)
                UNION SELECT s.store, s.environment, s.original_transaction_id FROM subscriptions s
                WHERE s.client_id IN (SELECT id FROM game) AND s.store = \(store) AND s.product_id = \(product)
            )
            SELECT DISTINCT t.player_id FROM purchases p
            CROSS JOIN LATERAL \(unescaped: EntitlementIndex.purchaseRows(store: "p.store", environment: "p.environment", original: "p.original")) t
            WHERE t.claimed_at IS NOT NULL AND t.player_id IS NOT NULL AND \(visible)
            UNION SELECT l.account_id FROM account_links l JOIN purchases p ON p.store = l.store AND p.original = l.original_transaction_id
            WHERE l.scope = \(catalog.scope)
            UNION SELECT player_id FROM player_entitlements WHERE client_id = \(catalog.clientID) AND store = \(store) AND product_id = \(entry.productID)
            """
        ).map { try $0.decode("player_id", as: String.self) }.sorted()
        var start = 0
        while start < players.count {
            if RefreshCutShort.due(deadline) { throw RefreshCutShort() }
            let slice = Array(players[start..<min(start + chunk, players.count)])
            try await pool.withTransaction {
                try EntitlementIndex.refresh(slice, catalog: catalog, announce: announce, on: $0)
            }
            start += chunk
        }
        return players.count
    }
}

/// A refresh stopped at its deadline or by its task's cancellation, between two of its transactions.
struct RefreshCutShort: Error {
    /// Whether work not yet begun should stop: `deadline` passed, or the task was cancelled (a shutdown).
    static func due(_ deadline: ContinuousClock.Instant?) -> Bool {
        Task.isCancelled || deadline.map { ContinuousClock.now >= $0 } == true
    }
}
