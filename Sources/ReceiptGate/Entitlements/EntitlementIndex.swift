import Foundation
import Postgres
import ReceiptCore

/// What each player owns now (`player_entitlements`), kept current by the writes that change it:
/// every store event applied, every claim of a product some catalog maps, every account link,
/// every catalog change, and the expiry sweep. Each recomputes the affected players from the
/// ledger in one statement, under a lock per player, inside the caller's database transaction, and
/// queues `entitlement.*` webhooks for what moved; so a read is one index lookup, and two changes
/// of one player never both miss each other.
enum EntitlementIndex {
    /// A catalog that may own rows for these players: its client, and who may see what.
    struct Catalog: Sendable {
        let clientID: String
        let gameID: Int64?
        /// The environments the client accepts: purchases of the others grant it nothing.
        let environments: [String]
        var scope: String { ClientInfo.scope(clientID: clientID, gameID: gameID) }

        init(clientID: String, gameID: Int64?, environments: [String]) {
            self.clientID = clientID
            self.gameID = gameID
            self.environments = environments
        }

        /// From a row with `id`, `game_id` and `environments` (a clients row).
        init(_ row: PostgresRow) throws {
            self.init(
                clientID: try row.decode("id"), gameID: try row.decode("game_id"),
                environments: try row.decode("environments"))
        }
    }

    /// After a change of the purchase (store, environment, original transaction id or the
    /// transaction's own id): refreshes whoever owns it, for every catalog of `client`'s game.
    static func refreshOwners(
        store: StoreID, environment: StoreEnvironment, original: String, transactionID: String, client: Client,
        on connection: PostgresConnection
    ) throws {
        guard !client.gameCatalog.isEmpty else { return }
        let scope = client.info.scope
        let players = try connection.query(
            """
            SELECT DISTINCT player_id FROM transactions t
            WHERE t.store = \(store.rawValue) AND t.environment = \(environment.rawValue)
              AND (t.original_transaction_id = \(original) OR t.transaction_id = \(transactionID) OR t.transaction_id = \(original))
              AND t.claimed_at IS NOT NULL AND t.player_id IS NOT NULL
            UNION SELECT account_id FROM account_links
            WHERE scope = \(scope) AND store = \(store.rawValue) AND original_transaction_id IN (\(original), \(transactionID))
            """
        ).map { try $0.decode("player_id", as: String.self) }
        guard !players.isEmpty else { return }
        for catalog in try catalogs(ofGameOf: client.clientID, on: connection) {
            try refresh(players, catalog: catalog, on: connection)
        }
    }

    /// Every client of `clientID`'s game (itself included) that has a catalog.
    static func catalogs(ofGameOf clientID: String, on connection: PostgresConnection) throws -> [Catalog] {
        try connection.query(
            """
            SELECT c.id, c.game_id, c.environments FROM clients me JOIN clients c ON c.id = me.id OR (me.game_id IS NOT NULL AND c.game_id = me.game_id)
            WHERE me.id = \(clientID) AND EXISTS (SELECT 1 FROM product_entitlements pe WHERE pe.client_id = c.id)
            ORDER BY c.id
            """
        ).map(Catalog.init)
    }

    /// Recomputes what `players` own under `catalog`, writes the difference and queues a webhook
    /// per change (when the catalog's client has a webhook). Returns the changes.
    @discardableResult
    static func refresh(
        _ players: [String], catalog: Catalog, announce: Bool = true, on connection: PostgresConnection
    ) throws -> [Moved] {
        let players = LedgerRules.distinctPlayers(players)
        guard !players.isEmpty else { return [] }
        // Locks in one order (sorted keys), so two refreshes of overlapping players cannot deadlock;
        // the statement below runs after the lock, so it sees what a refresh before it committed.
        try connection.execute(
            """
            SELECT pg_advisory_xact_lock(\(Self.lockSpace), k) FROM (
                SELECT DISTINCT hashtext(\(catalog.clientID) || '/' || p) AS k FROM unnest(\(players)::text[]) p ORDER BY 1) keys
            """)
        let rows = try connection.query(statement(players, catalog: catalog))
        var moved: [Moved] = []
        for row in rows {
            let grant = try EntitlementRows.grant(row)
            let after: EntitlementRules.Grant? =
                try row.decode("side", as: String.self) == "written"
                ? .init(expires: grant.expiresDate, grace: grant.gracePeriodExpiresDate) : nil
            let before: EntitlementRules.Grant? =
                try row.decode("had_before", as: Bool.self)
                ? .init(expires: try row.decode("before_expires"), grace: try row.decode("before_grace")) : nil
            // The database's time, the instant the statement chose what is owned by.
            let checkedAt = try row.decode("checked_at", as: Date.self)
            guard let change = EntitlementRules.change(before: before, after: after, at: checkedAt) else { continue }
            moved.append(Moved(change: change, grant: grant))
            if announce, try row.decode("announce", as: Bool.self) {
                try OutboxRepository.enqueue(
                    event: "entitlement.\(change.rawValue)", payload: EntitlementNews(grant: grant, at: checkedAt),
                    client: catalog.clientID,
                    aggregateKey: "entitlements:\(catalog.clientID):\(grant.playerID)", on: connection)
            }
        }
        return moved
    }

    /// One entitlement that moved, and the grant it is about (after the change; before it, for a removal).
    struct Moved: Sendable {
        let change: EntitlementChange
        let grant: EntitlementGrant
    }

    /// The transactions of one purchase: those whose original transaction id is `original`, and
    /// the one whose own id it is. Two index lookups, written as two branches: an `OR` of the two
    /// in a join condition makes Postgres compare every row of the store. `environment` nil: either
    /// environment (what an account link names does not say).
    static func purchaseRows(store: String, environment: String?, original: String) -> String {
        let environments =
            environment ?? "ANY('{\(StoreEnvironment.allCases.map(\.rawValue).joined(separator: ","))}'::text[])"
        let match = environment.map { "= \($0)" } ?? "= \(environments)"
        return """
            (SELECT x.* FROM transactions x WHERE x.store = \(store) AND x.original_transaction_id = \(original) AND x.environment \(match)
             UNION ALL
             SELECT x.* FROM transactions x WHERE x.store = \(store) AND x.environment \(match) AND x.transaction_id = \(original)
               AND x.original_transaction_id IS DISTINCT FROM \(original))
            """
    }

    /// The advisory-lock space of player refreshes (the two-key form, apart from other locks).
    static let lockSpace: Int32 = 0x5247_454E  // "RGEN"

    private static let withdrawnStates = TransactionState.allCases.filter(\.isWithdrawn).map(\.rawValue)
    private static let accessStatuses = EntitlementRules.accessStatuses.map(\.rawValue)
    /// The kinds that never grant, a row of unknown kind as '' (the SQL filters compare `COALESCE(product_kind, '')`).
    private static let nonGrantingKinds = ([nil] + ProductKind.allCases.map(Optional.some)).filter {
        !EntitlementRules.mayGrant($0)
    }
    .map { $0?.rawValue ?? "" }

    /// Desired rows from the ledger, then the difference written: rows no longer owned deleted,
    /// new or changed ones upserted; each returned with what it was before (one snapshot: `before`).
    private static func statement(_ players: [String], catalog: Catalog) -> PostgresQuery {
        let visible = LedgerSQL.visible(
            owner: "t", callerClient: "\(catalog.clientID)", callerGame: "\(catalog.gameID)")
        // Only purchases that may grant something are looked at (most of a game's are consumables):
        // a subscription (its product may have changed since), or a product this catalog maps.
        let mayGrant: PostgresQuery = """
            t.environment = ANY(\(catalog.environments)::text[]) AND NOT (COALESCE(t.product_kind, '') = ANY(\(nonGrantingKinds)::text[]))
            AND (t.product_kind = \(ProductKind.autoRenewableSubscription.rawValue) OR EXISTS (
                SELECT 1 FROM product_entitlements m WHERE m.client_id = \(catalog.clientID) AND m.store = t.store
                  AND \(unescaped: EntitlementRules.catalogMatchSQL(entry: "m.product_id", product: "t.product_id", option: "t.purchase_option_id")))
              OR (t.commerce_items IS NOT NULL AND EXISTS (
                SELECT 1 FROM product_entitlements m, jsonb_array_elements(t.commerce_items) AS i(item)
                WHERE m.client_id = \(catalog.clientID) AND m.store = t.store AND m.product_id = i.item ->> 'sku')))
            """
        return """
            WITH game AS (
                SELECT c.id FROM clients c WHERE c.id = \(catalog.clientID) OR (\(catalog.gameID)::bigint IS NOT NULL AND c.game_id = \(catalog.gameID))
            ), units AS (  -- every purchase a player in scope claimed, or an account in scope was linked to
                SELECT DISTINCT t.store, t.environment, COALESCE(t.original_transaction_id, t.transaction_id) AS original
                FROM transactions t
                WHERE t.client_id IN (SELECT id FROM game) AND t.player_id = ANY(\(players)::text[]) AND t.claimed_at IS NOT NULL AND \(visible)
                  AND \(mayGrant)
            ), linked AS (
                SELECT DISTINCT l.account_id AS player_id, t.store, t.environment, COALESCE(t.original_transaction_id, t.transaction_id) AS original
                FROM account_links l
                CROSS JOIN LATERAL \(unescaped: Self.purchaseRows(store: "l.store", environment: nil, original: "l.original_transaction_id")) t
                WHERE l.scope = \(catalog.scope) AND l.account_id = ANY(\(players)::text[]) AND \(visible) AND \(mayGrant)
            ), claimants AS (  -- a purchase is its first claimant's (`TransactionRepository.subscriptionOwner`, the claims' rule)
                SELECT DISTINCT ON (u.store, u.environment, u.original) t.player_id, u.store, u.environment, u.original
                FROM units u
                CROSS JOIN LATERAL \(unescaped: Self.purchaseRows(store: "u.store", environment: "u.environment", original: "u.original")) t
                WHERE \(unescaped: LedgerSQL.ownerClaim("t")) AND \(visible)
                ORDER BY u.store, u.environment, u.original, \(unescaped: LedgerSQL.ownerClaimOrder("t"))
            ), owned AS (
                SELECT * FROM claimants WHERE player_id = ANY(\(players)::text[])
                UNION SELECT * FROM linked
            ), candidates AS (
                SELECT o.player_id, pe.entitlement, s.store, s.environment, g.product_id, t.id AS transaction_row_id, t.transaction_id,
                       s.original_transaction_id, t.purchase_date, s.expires_date, s.grace_period_expires_date,
                       \(unescaped: EntitlementRules.willRenewSQL(autoRenew: "s.auto_renew", commitment: "t.commitment", expires: "s.expires_date")) AS will_renew,
                       t.ownership
                FROM owned o
                JOIN subscriptions s ON s.store = o.store AND s.environment = o.environment AND s.original_transaction_id = o.original
                JOIN transactions t ON t.store = s.store AND t.environment = s.environment AND t.transaction_id = s.latest_transaction_id
                CROSS JOIN LATERAL (  -- the subscription's product, and the SKUs of the items its latest period still sells
                    SELECT s.product_id
                    UNION SELECT i.item ->> 'sku' FROM jsonb_array_elements(COALESCE(t.commerce_items, '[]'::jsonb)) AS i(item)
                    WHERE \(unescaped: PurchaseItemSQL.stands("i.item"))) AS g(product_id)
                JOIN product_entitlements pe ON pe.client_id = \(catalog.clientID) AND pe.store = s.store AND pe.product_id = g.product_id
                WHERE s.status = ANY(\(accessStatuses)::text[]) AND NOT (t.state = ANY(\(withdrawnStates)::text[]))
                  AND \(unescaped: EntitlementRules.holdsSQL(expires: "s.expires_date", grace: "s.grace_period_expires_date"))
                UNION ALL
                SELECT o.player_id, pe.entitlement, t.store, t.environment, t.product_id, t.id, t.transaction_id, t.original_transaction_id,
                       t.purchase_date, t.expires_date, NULL, false, t.ownership
                FROM owned o
                CROSS JOIN LATERAL \(unescaped: Self.purchaseRows(store: "o.store", environment: "o.environment", original: "o.original")) t
                JOIN product_entitlements pe ON pe.client_id = \(catalog.clientID) AND pe.store = t.store
                  AND \(unescaped: EntitlementRules.catalogMatchSQL(entry: "pe.product_id", product: "t.product_id", option: "t.purchase_option_id"))
                WHERE NOT EXISTS (SELECT 1 FROM subscriptions s
                                  WHERE s.store = o.store AND s.environment = o.environment AND s.original_transaction_id = o.original)
                  AND t.state = \(TransactionState.active.rawValue) AND NOT (COALESCE(t.product_kind, '') = ANY(\(nonGrantingKinds)::text[]))
                  AND \(unescaped: EntitlementRules.holdsSQL(expires: "t.expires_date", grace: "NULL")) AND \(visible)
                UNION ALL  -- the items of a one-time purchase that sold several, each by its SKU, until refunded or taken back
                SELECT o.player_id, pe.entitlement, t.store, t.environment, i.item ->> 'sku', t.id, t.transaction_id,
                       t.original_transaction_id, t.purchase_date, t.expires_date, NULL, false, t.ownership
                FROM owned o
                CROSS JOIN LATERAL \(unescaped: Self.purchaseRows(store: "o.store", environment: "o.environment", original: "o.original")) t
                CROSS JOIN LATERAL jsonb_array_elements(t.commerce_items) AS i(item)
                JOIN product_entitlements pe ON pe.client_id = \(catalog.clientID) AND pe.store = t.store AND pe.product_id = i.item ->> 'sku'
                WHERE NOT EXISTS (SELECT 1 FROM subscriptions s
                                  WHERE s.store = o.store AND s.environment = o.environment AND s.original_transaction_id = o.original)
                  AND t.state = \(TransactionState.active.rawValue) AND NOT (COALESCE(t.product_kind, '') = ANY(\(nonGrantingKinds)::text[]))
                  AND \(unescaped: PurchaseItemSQL.stands("i.item"))
                  AND \(unescaped: EntitlementRules.holdsSQL(expires: "t.expires_date", grace: "NULL")) AND \(visible)
            ), desired AS (
                SELECT DISTINCT ON (player_id, entitlement) * FROM candidates
                ORDER BY player_id, entitlement, \(unescaped: EntitlementRules.preferenceOrder)
            ), before AS (
                SELECT player_id, entitlement, expires_date, grace_period_expires_date FROM player_entitlements
                WHERE client_id = \(catalog.clientID) AND player_id = ANY(\(players)::text[])
            ), removed AS (
                DELETE FROM player_entitlements pe
                WHERE pe.client_id = \(catalog.clientID) AND pe.player_id = ANY(\(players)::text[])
                  AND NOT EXISTS (SELECT 1 FROM desired d WHERE d.player_id = pe.player_id AND d.entitlement = pe.entitlement)
                RETURNING pe.*
            ), written AS (
                INSERT INTO player_entitlements (client_id, \(unescaped: EntitlementRows.written))
                SELECT \(catalog.clientID), \(unescaped: EntitlementRows.written) FROM desired
                ON CONFLICT (client_id, player_id, entitlement) DO UPDATE SET
                    store = EXCLUDED.store, environment = EXCLUDED.environment, product_id = EXCLUDED.product_id,
                    transaction_row_id = EXCLUDED.transaction_row_id, transaction_id = EXCLUDED.transaction_id,
                    original_transaction_id = EXCLUDED.original_transaction_id, purchase_date = EXCLUDED.purchase_date,
                    expires_date = EXCLUDED.expires_date, grace_period_expires_date = EXCLUDED.grace_period_expires_date,
                    will_renew = EXCLUDED.will_renew, ownership = EXCLUDED.ownership, updated_at = now()
                WHERE ROW(player_entitlements.store, player_entitlements.environment, player_entitlements.product_id,
                          player_entitlements.transaction_row_id, player_entitlements.purchase_date, player_entitlements.expires_date,
                          player_entitlements.grace_period_expires_date, player_entitlements.will_renew, player_entitlements.ownership)
                      IS DISTINCT FROM ROW(EXCLUDED.store, EXCLUDED.environment, EXCLUDED.product_id, EXCLUDED.transaction_row_id,
                          EXCLUDED.purchase_date, EXCLUDED.expires_date, EXCLUDED.grace_period_expires_date, EXCLUDED.will_renew, EXCLUDED.ownership)
                RETURNING *
            ), announce AS (
                SELECT webhook_url IS NOT NULL AS announce FROM clients WHERE id = \(catalog.clientID)
            )
            SELECT 'removed' AS side, \(unescaped: EntitlementRows.columns(of: "r")), true AS had_before,
                   r.expires_date AS before_expires, r.grace_period_expires_date AS before_grace, a.announce,
                   now() AS checked_at
            FROM removed r, announce a
            UNION ALL
            SELECT 'written', \(unescaped: EntitlementRows.columns(of: "w")), b.player_id IS NOT NULL,
                   b.expires_date, b.grace_period_expires_date, a.announce, now()
            FROM written w LEFT JOIN before b ON b.player_id = w.player_id AND b.entitlement = w.entitlement, announce a
            """
    }
}
