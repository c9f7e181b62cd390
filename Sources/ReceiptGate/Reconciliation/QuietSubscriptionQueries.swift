import Foundation
import Postgres
import ReceiptCore

/// Subscriptions whose period (and grace) ended with no news, for reconciliation to ask the
/// store about.
struct QuietSubscriptionQueries: Sendable {
    let pool: PostgresPool

    /// At most `limit` of `store`'s subscriptions of enabled clients still thought live (active,
    /// in grace or billing retry) whose end passed more than `after` seconds ago, not read back in
    /// the last `spacing` seconds (doubled for each read-back in a row that told nothing, up to 64
    /// times): never read back first, oldest end first, then those read back longest ago.
    func due(store: StoreID, after: Double, spacing: Double, limit: Int) async throws -> [QuietSubscription] {
        try await pool.query(
            """
            SELECT \(unescaped: Self.columns)
            FROM subscriptions s
            JOIN clients c ON c.id = s.client_id AND c.disabled_at IS NULL
            LEFT JOIN transactions t ON t.store = s.store AND t.environment = s.environment AND t.transaction_id = s.latest_transaction_id
            WHERE s.store = \(store.rawValue) AND s.status IN ('active', 'grace_period', 'billing_retry')
              AND COALESCE(s.grace_period_expires_date, s.expires_date) < now() - make_interval(secs => \(after)::float8)
              AND (s.reread_at IS NULL
                   OR s.reread_at < now() - make_interval(secs => \(spacing)::float8 * power(2, least(s.reread_empty, 6))))
            ORDER BY s.reread_at NULLS FIRST, COALESCE(s.grace_period_expires_date, s.expires_date)
            LIMIT \(limit)
            """
        ).map { try Self.subscription($0, store: store) }
    }

    /// What a subscription is read back by: its row (`s`) with its latest period's app (`t`).
    static let columns = """
        s.environment, s.original_transaction_id, s.latest_transaction_id, s.product_id, s.expires_date, s.read_back_key,
        s.client_id, t.app_identifier
        """

    /// A row selected with `columns` as the subscription to read back.
    static func subscription(_ row: PostgresRow, store: StoreID) throws -> QuietSubscription {
        QuietSubscription(
            store: store,
            environment: StoreEnvironment(rawValue: try row.decode("environment", as: String.self)) ?? .production,
            originalTransactionID: try row.decode("original_transaction_id", as: String.self),
            latestTransactionID: try row.decode("latest_transaction_id", as: String?.self),
            productID: try row.decode("product_id", as: String?.self),
            expiresDate: try row.decode("expires_date", as: Date?.self),
            appIdentifier: try row.decode("app_identifier", as: String?.self),
            readBackKey: try row.decode("read_back_key", as: String?.self),
            clientID: try row.decode("client_id", as: String.self))
    }

    /// Notes that the store was asked, so the subscription waits its turn; `learned`: whether the
    /// store said anything of it (an empty answer makes the next wait longer).
    func markReread(_ subscription: QuietSubscription, learned: Bool) async throws {
        try await pool.execute(
            """
            UPDATE subscriptions SET reread_at = now(), reread_empty = CASE WHEN \(learned) THEN 0 ELSE reread_empty + 1 END
            WHERE store = \(subscription.store.rawValue) AND environment = \(subscription.environment.rawValue)
              AND original_transaction_id = \(subscription.originalTransactionID)
            """)
    }
}
