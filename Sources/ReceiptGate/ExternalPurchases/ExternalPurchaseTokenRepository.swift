import Foundation
import Postgres
import ReceiptCore

/// Tokens of purchases made outside a store's billing and what was reported of them. A token's
/// reports are queued in the outbox in the same transaction that moves its row, so a report is
/// owed exactly when the row says so; the row is locked while it moves, so two processes never
/// queue one report twice.
struct ExternalPurchaseTokenRepository: Sendable {
    let pool: PostgresPool

    /// A token as the console and the API show it.
    struct Row: Sendable {
        let id: Int64, clientID: String, store: String, environment: String, appIdentifier: String
        let reportID: String, playerID: String?, webStore: String?, orderID: String?
        let state: String, reportBy: Date, storeDeadline: Date, saleReportedAt: Date?
        let refundedShare: Int, reportsSent: Int, lastAnswer: String?, lastError: String?, createdAt: Date
    }

    static let columns: PostgresQuery = """
        id, client_id, store, environment, app_identifier, report_id, player_id, web_store, order_id, state, report_by,
        store_deadline, sale_reported_at, refunded_share, reports_sent, last_answer, last_error, created_at
        """

    static func row(_ row: PostgresRow) throws -> Row {
        Row(
            id: try row.decode("id"), clientID: try row.decode("client_id"), store: try row.decode("store"),
            environment: try row.decode("environment"), appIdentifier: try row.decode("app_identifier"),
            reportID: try row.decode("report_id"), playerID: try row.decode("player_id"),
            webStore: try row.decode("web_store"), orderID: try row.decode("order_id"), state: try row.decode("state"),
            reportBy: try row.decode("report_by"), storeDeadline: try row.decode("store_deadline"),
            saleReportedAt: try row.decode("sale_reported_at"), refundedShare: try row.decode("refunded_share"),
            reportsSent: try row.decode("reports_sent"), lastAnswer: try row.decode("last_answer"),
            lastError: try row.decode("last_error"), createdAt: try row.decode("created_at"))
    }

    /// What the game (or a web sale carrying the token) says of a token.
    struct Registration: Sendable {
        let token: ExternalPurchaseToken
        let raw: String
        let clientID: String
        let playerID: String?
        let webStore: String?
        let orderID: String?
        let reportBy: Date
    }

    /// Registers a token once; registering it again adds what was missing (the order, the
    /// player) and returns the row. Nil when another client holds the token.
    func register(_ registration: Registration) async throws -> Row? {
        try await pool.withTransaction { connection in
            try Self.register(registration, on: connection)
        }
    }

    static func register(_ registration: Registration, on connection: PostgresConnection) throws -> Row? {
        let token = registration.token
        let columns = Self.columns
        let inserted = try connection.query(
            """
            INSERT INTO external_purchase_tokens (client_id, store, environment, app_identifier, report_id, token, player_id,
                web_store, order_id, issued_at, store_deadline, report_by, once_per_player)
            VALUES (\(registration.clientID), \(token.store.rawValue), \(token.environment.rawValue), \(token.appIdentifier),
                    \(token.reportID), \(registration.raw), \(registration.playerID), \(registration.webStore), \(registration.orderID),
                    \(token.issuedAt), \(token.storeDeadline), \(registration.reportBy), \(token.oncePerPlayer))
            ON CONFLICT (store, environment, report_id) DO UPDATE SET
                player_id = COALESCE(external_purchase_tokens.player_id, excluded.player_id),
                web_store = COALESCE(external_purchase_tokens.web_store, excluded.web_store),
                order_id = CASE WHEN external_purchase_tokens.web_store IS NULL THEN excluded.order_id
                                ELSE external_purchase_tokens.order_id END,
                updated_at = now()
            WHERE external_purchase_tokens.client_id = excluded.client_id
            RETURNING \(columns)
            """)
        return try inserted.first.map(Self.row)
    }

    /// A token a store asked about that nobody registered (or registered for an app no client
    /// holds): recorded for the client that holds the app, to be reported as unrecognized.
    static func registerUnrecognized(
        _ token: ExternalPurchaseToken, clientID: String, on connection: PostgresConnection
    ) throws -> Int64? {
        try connection.query(
            """
            INSERT INTO external_purchase_tokens (client_id, store, environment, app_identifier, report_id, token, issued_at,
                store_deadline, report_by, state)
            VALUES (\(clientID), \(token.store.rawValue), \(token.environment.rawValue), \(token.appIdentifier), \(token.reportID),
                    \(token.reportID), \(token.issuedAt), \(token.storeDeadline), \(token.storeDeadline), 'unrecognized_queued')
            ON CONFLICT (store, environment, report_id) DO NOTHING
            RETURNING id
            """
        ).first?.decode("id", as: Int64.self)
    }

    /// The row the store names, with its client.
    static func find(
        store: StoreID, environment: StoreEnvironment, reportID: String, on connection: PostgresConnection
    ) throws -> Row? {
        let columns = Self.columns
        return try connection.query(
            """
            SELECT \(columns) FROM external_purchase_tokens
            WHERE store = \(store.rawValue) AND environment = \(environment.rawValue) AND report_id = \(reportID)
            """
        ).first.map(Self.row)
    }

    /// Tokens whose report may be owed now: waiting ones whose deadline came (of a store in
    /// `noSaleStores`, the ones that want a report of no sale) or whose sale is in the ledger
    /// (until `ExternalPurchaseLedger.lateSaleWindow` after the token's deadline, whether it was
    /// reported without a sale by then or its store wants no such report),
    /// reported sales the ledger refunded more of since, and sold subscriptions with a period not
    /// reported yet or refunded more of since.
    func due(now: Date, noSaleStores: Set<StoreID>, limit: Int = 200) async throws -> [Int64] {
        // Each branch on its own so each reads its partial index (waiting, without a sale).
        let since = now.addingTimeInterval(-ExternalPurchaseLedger.lateSaleWindow)
        return try await pool.query(
            """
            SELECT e.id FROM external_purchase_tokens e
            WHERE e.state = 'waiting' AND e.report_by <= \(now) AND e.store = ANY (\(noSaleStores.map(\.rawValue).sorted())::text[])
            UNION
            SELECT e.id FROM external_purchase_tokens e
            WHERE e.state = 'waiting' AND e.report_by > \(since) AND \(unescaped: Self.saleInLedgerSQL)
            UNION
            SELECT e.id FROM external_purchase_tokens e
            WHERE e.state IN (\(unescaped: ExternalPurchaseLedger.withoutSaleStatesSQL))
              AND e.report_by > \(since) AND \(unescaped: Self.saleInLedgerSQL)
            UNION
            SELECT e.id FROM external_purchase_tokens e
            WHERE e.state IN ('sale_queued', 'reported') AND EXISTS (
                SELECT 1 FROM transactions t WHERE t.id = ANY (e.sale_rows)
                AND \(unescaped: Self.refundedShareSQL) > e.refunded_share)
            UNION
            SELECT e.id FROM external_purchase_tokens e
            WHERE e.state IN ('sale_queued', 'reported') AND EXISTS (
                SELECT 1 FROM transactions s
                JOIN transactions r ON r.store = s.store AND r.original_transaction_id = s.original_transaction_id
                    AND r.client_id = s.client_id
                WHERE s.id = ANY (e.sale_rows) AND s.product_kind = 'auto_renewable_subscription'
                  AND r.price_milliunits IS NOT NULL AND r.currency IS NOT NULL
                  AND ((r.id <> ALL (e.sale_rows) AND r.id <> ALL (e.renewal_rows))
                       OR (r.id = ANY (e.renewal_rows)
                           AND \(unescaped: Self.refundedShareSQL.replacingOccurrences(of: "t.", with: "r."))
                               > COALESCE((e.renewal_refunded ->> r.id::text)::int, 0))))
            ORDER BY 1 LIMIT \(limit)
            """
        ).map { try $0.decode("id", as: Int64.self) }
    }

    /// A ledger row `t` that is a line of a sale (it has a price), not a refund's record.
    static let pricedSQL = "t.price_milliunits IS NOT NULL AND t.currency IS NOT NULL"

    /// Token `e`'s sale is in the ledger: the web store's order the game named, or a sale carrying
    /// the token; the rows `ExternalPurchaseLedger.saleLines` reports.
    static let saleInLedgerSQL = """
        EXISTS (
            SELECT 1 FROM transactions t WHERE t.client_id = e.client_id AND \(pricedSQL)
            AND ((e.web_store IS NOT NULL AND t.store = e.web_store AND t.order_id = e.order_id)
                 OR t.external_purchase_token = e.token))
        """

    /// The share of a ledger row refunded, in thousandths of a percent: all of it once the
    /// purchase was taken back, else what a partial refund said.
    static let refundedShareSQL =
        "CASE WHEN t.state IN ('refunded', 'revoked') THEN 100000 ELSE COALESCE(t.refund_percentage_milliunits, 0) END"

    /// Web sales carrying a token nobody registered yet, for the sweep to register.
    struct CarriedToken: Sendable {
        let clientID: String
        let token: String
        let playerID: String?
        let store: String
        let orderID: String?
    }

    func unregisteredCarriedTokens(limit: Int = 100) async throws -> [CarriedToken] {
        try await pool.query(
            """
            SELECT DISTINCT ON (t.client_id, t.external_purchase_token) t.client_id, t.external_purchase_token, t.player_id,
                t.store, t.order_id
            FROM transactions t
            WHERE t.external_purchase_token IS NOT NULL AND NOT EXISTS (
                SELECT 1 FROM external_purchase_tokens e WHERE e.client_id = t.client_id AND e.token = t.external_purchase_token)
            ORDER BY t.client_id, t.external_purchase_token, t.id
            LIMIT \(limit)
            """
        ).map {
            CarriedToken(
                clientID: try $0.decode("client_id"), token: try $0.decode("external_purchase_token"),
                playerID: try $0.decode("player_id"), store: try $0.decode("store"), orderID: try $0.decode("order_id"))
        }
    }

    /// A carried token no store takes: kept as refused (with why), so it is looked at once.
    func refuseCarried(_ carried: CarriedToken, why: String) async throws {
        try await pool.execute(
            """
            INSERT INTO external_purchase_tokens (client_id, store, environment, app_identifier, report_id, token, player_id,
                web_store, order_id, store_deadline, report_by, state, last_error)
            VALUES (\(carried.clientID), '', '', '', \("refused:\(carried.clientID):\(carried.token)"), \(carried.token), \(carried.playerID),
                    \(carried.store), \(carried.orderID), now(), now(), 'refused', \(String(why.prefix(300))))
            ON CONFLICT (store, environment, report_id) DO NOTHING
            """)
    }

    /// The client's tokens, newest first (the console).
    func list(clientID: String?, id: Int64? = nil, limit: Int = 200) async throws -> [Row] {
        let columns = Self.columns
        return try await pool.query(
            """
            SELECT \(columns) FROM external_purchase_tokens
            WHERE (\(clientID)::text IS NULL OR client_id = \(clientID)) AND (\(id)::bigint IS NULL OR id = \(id))
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map(Self.row)
    }

    /// Tokens by store and state, waiting ones due within a day, and the store's notices of late
    /// reports (the cluster's, for `/metrics`).
    func counts(
        now: Date
    ) async throws -> (
        states: [(String, String, Int)], nearDeadline: [(String, Int)], unreportedNotices: [(String, Int)]
    ) {
        let states = try await pool.query(
            "SELECT store, state, count(*) AS n FROM external_purchase_tokens GROUP BY store, state ORDER BY store, state"
        ).map {
            (
                try $0.decode("store", as: String.self), try $0.decode("state", as: String.self),
                try $0.decode("n", as: Int.self)
            )
        }
        let near = try await pool.query(
            """
            SELECT store, count(*) AS n FROM external_purchase_tokens
            WHERE state = 'waiting' AND report_by <= \(now.addingTimeInterval(86_400)) GROUP BY store ORDER BY store
            """
        ).map { (try $0.decode("store", as: String.self), try $0.decode("n", as: Int.self)) }
        let notices = try await pool.query(
            """
            SELECT store, sum(unreported_notices)::bigint AS n FROM external_purchase_tokens
            WHERE unreported_notices > 0 GROUP BY store ORDER BY store
            """
        ).map { (try $0.decode("store", as: String.self), try $0.decode("n", as: Int.self)) }
        return (states, near, notices)
    }

    /// The store took a report: the token's state after it, and the store's answer.
    func settle(_ report: ExternalPurchaseReport, answer: String) async throws {
        // Each report moves the token only from the state that queued it: a no-sale report
        // taken after the token's late sale was queued leaves the sale's state as it is.
        let queued = Self.queuedState(report.kind)
        let state: String? =
            switch report.kind {
            case .sale: "reported"
            case .noSale: "reported_no_sale"
            case .unrecognized: "reported_unrecognized"
            case .duplicate: "reported_duplicate"
            case .refund, .renewal: nil
            }
        try await pool.execute(
            """
            UPDATE external_purchase_tokens
            SET state = CASE WHEN state = \(queued) THEN \(state) ELSE state END, reports_sent = reports_sent + 1,
                sale_reported_at = CASE WHEN \(report.kind.rawValue) = 'sale' THEN now() ELSE sale_reported_at END,
                last_answer = \(String(answer.prefix(500))), last_error = NULL, updated_at = now()
            WHERE id = \(report.tokenRowID)
            """)
    }

    /// The store refused a report for good: kept with its words, never sent again. A report of
    /// no sale refused after the token's late sale was queued leaves the sale's state as it is.
    func refuse(_ report: ExternalPurchaseReport, why: String) async throws {
        let queued = Self.queuedState(report.kind)
        try await pool.execute(
            """
            UPDATE external_purchase_tokens
            SET state = CASE WHEN \(queued)::text IS NULL OR state = \(queued) THEN 'refused' ELSE state END,
                last_error = \(String(why.prefix(500))), updated_at = now()
            WHERE id = \(report.tokenRowID)
            """)
    }

    /// The state a token is in while a report of `kind` is on its way (nil: refunds and renewals
    /// leave it as it is).
    static func queuedState(_ kind: ExternalPurchaseReport.Kind) -> String? {
        switch kind {
        case .sale: "sale_queued"
        case .noSale: "no_sale_queued"
        case .unrecognized: "unrecognized_queued"
        case .duplicate: "duplicate_queued"
        case .refund, .renewal: nil
        }
    }

    /// A try that failed and will be tried again: kept for the console.
    func noteFailure(_ report: ExternalPurchaseReport, why: String) async throws {
        try await pool.execute(
            """
            UPDATE external_purchase_tokens SET last_error = \(String(why.prefix(500))), updated_at = now()
            WHERE id = \(report.tokenRowID)
            """)
    }
}
