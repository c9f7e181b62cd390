import Foundation
import Postgres
import ReceiptCore

/// Subscriptions, one row per original transaction: always the latest period the ledger knows.
/// Only called inside the database transaction of the change that moves them.
enum SubscriptionRepository {
    /// Records the period `purchase` is of, unless the subscription is already in a later one.
    /// True if it moved the subscription's end later (a renewal, even one the store keeps under
    /// the same transaction id, as some stores do). Callers hold the transaction row's lock, so two
    /// tellings of one renewal are read one after the other.
    @discardableResult
    static func upsert(
        _ purchase: VerifiedPurchase, original: String, client: Client, at now: Date, on connection: PostgresConnection
    ) throws -> Bool {
        let moved = try connection.query(
            """
            WITH before AS (  -- the statement's snapshot: the row as it was (a locking read here would skip the row it updates)
                SELECT expires_date FROM subscriptions
                WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
            )
            INSERT INTO subscriptions (store, environment, original_transaction_id, product_id, status, expires_date, revocation_date,
                                       latest_transaction_id, client_id, read_back_key, auto_renew)
            VALUES (\(purchase.store.rawValue), \(purchase.environment.rawValue), \(original), \(purchase.productID),
                    \(status(of: purchase, at: now).rawValue), \(purchase.expiresDate), \(purchase.revocationDate), \(purchase.transactionID), \(client.clientID),
                    \(purchase.readBackKey), \(purchase.autoRenews))
            ON CONFLICT (store, environment, original_transaction_id) DO UPDATE SET
                product_id = EXCLUDED.product_id,
                auto_renew = COALESCE(EXCLUDED.auto_renew, subscriptions.auto_renew),
                read_back_key = COALESCE(EXCLUDED.read_back_key, subscriptions.read_back_key),
                status = EXCLUDED.status,
                -- a later period is out of any grace of an earlier one
                grace_period_expires_date = CASE WHEN EXCLUDED.expires_date > subscriptions.expires_date THEN NULL
                                                 ELSE subscriptions.grace_period_expires_date END,
                expires_date = EXCLUDED.expires_date,
                revocation_date = EXCLUDED.revocation_date,
                latest_transaction_id = EXCLUDED.latest_transaction_id,
                updated_at = now()
            WHERE subscriptions.expires_date IS NULL OR EXCLUDED.expires_date >= subscriptions.expires_date
            RETURNING (SELECT expires_date FROM before) AS before_expires, expires_date
            """
        ).first
        guard let moved, let before = try moved.decode("before_expires", as: Date?.self),
            let after = try moved.decode("expires_date", as: Date?.self)
        else { return false }
        return after > before
    }

    /// Keeps what the store needs to read the subscription again, where it was not kept yet.
    static func rememberReadBackKey(
        _ key: String, purchase: VerifiedPurchase, original: String, on connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            UPDATE subscriptions SET read_back_key = \(key)
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
              AND read_back_key IS DISTINCT FROM \(key)
            """)
    }

    static func status(of purchase: VerifiedPurchase, at now: Date) -> SubscriptionStatus {
        SubscriptionStatus(LedgerRules.state(of: purchase, at: now))
    }

    static func find(
        store: StoreID, environment: StoreEnvironment, original: String, on connection: PostgresConnection
    ) throws -> SubscriptionState? {
        try connection.query(
            """
            SELECT \(unescaped: TransactionRows.subscriptionColumns) FROM subscriptions
            WHERE store = \(store.rawValue) AND environment = \(environment.rawValue) AND original_transaction_id = \(original)
            """
        ).first.map(TransactionRows.subscription)
    }

    /// Moves the subscription to `status` (creating the row if the store told us first), keeping a
    /// known grace end, unless the news is about an earlier period than the one the subscription
    /// is in (an expiry told late, after a renewal or a new subscription: a notification read back
    /// from a store's history arrives in any order). News of the latest period itself always
    /// applies, even with an earlier end (a subscription the store ended before its renewal date). True if it moved (or the row is new): the row
    /// is locked before it is read.
    @discardableResult
    static func setStatus(
        _ status: SubscriptionStatus, purchase: VerifiedPurchase, original: String, owner: Client,
        graceUntil: Date? = nil,
        on connection: PostgresConnection
    ) throws -> Bool {
        let before = try connection.query(
            """
            SELECT status FROM subscriptions
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
            FOR UPDATE
            """
        ).first.map { try $0.decode("status", as: String.self) }
        let changed = try connection.execute(
            """
            INSERT INTO subscriptions (store, environment, original_transaction_id, product_id, status, expires_date,
                                       grace_period_expires_date, latest_transaction_id, client_id, read_back_key)
            VALUES (\(purchase.store.rawValue), \(purchase.environment.rawValue), \(original), \(purchase.productID), \(status.rawValue),
                    \(purchase.expiresDate), \(graceUntil), \(purchase.transactionID), \(owner.clientID), \(purchase.readBackKey))
            ON CONFLICT (store, environment, original_transaction_id) DO UPDATE SET
                status = EXCLUDED.status,
                read_back_key = COALESCE(EXCLUDED.read_back_key, subscriptions.read_back_key),
                grace_period_expires_date = COALESCE(EXCLUDED.grace_period_expires_date, subscriptions.grace_period_expires_date),
                updated_at = now()
            WHERE subscriptions.expires_date IS NULL OR EXCLUDED.expires_date IS NULL OR EXCLUDED.expires_date >= subscriptions.expires_date
               OR subscriptions.latest_transaction_id = EXCLUDED.latest_transaction_id  -- the same period, cut short
            """)
        return changed == 1 && before != status.rawValue
    }

    /// A refund or revocation of the subscription's latest period; one the store did not date is
    /// dated by the database's clock, as `updated_at` is.
    static func markRevoked(
        _ status: SubscriptionStatus, purchase: VerifiedPurchase, original: String, on connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            UPDATE subscriptions SET status = \(status.rawValue), revocation_date = COALESCE(\(purchase.revocationDate)::timestamptz, now()), updated_at = now()
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
              AND latest_transaction_id = \(purchase.transactionID)
            """)
    }

    /// A refund reversed: the subscription's latest period counts again (active, or expired if it is over).
    static func reinstate(_ purchase: VerifiedPurchase, original: String, on connection: PostgresConnection) throws {
        try connection.execute(
            """
            UPDATE subscriptions SET revocation_date = NULL, updated_at = now(),
                status = CASE WHEN expires_date IS NULL OR expires_date > now() THEN 'active' ELSE 'expired' END
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
              AND latest_transaction_id = \(purchase.transactionID) AND status IN ('refunded', 'revoked')
            """)
    }

    static func setAutoRenew(
        _ autoRenew: Bool, purchase: VerifiedPurchase, original: String, on connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            UPDATE subscriptions SET auto_renew = \(autoRenew), updated_at = now()
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
            """)
    }

    /// Whether `purchase` is of the subscription's current period (not an earlier one): its expiry
    /// is not before the subscription's, or either is unknown.
    static func isCurrentPeriod(
        _ purchase: VerifiedPurchase, original: String, on connection: PostgresConnection
    ) throws -> Bool {
        guard let expires = purchase.expiresDate else { return true }
        let current = try connection.query(
            """
            SELECT expires_date FROM subscriptions
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
            """
        ).first.flatMap { try $0.decode("expires_date", as: Date?.self) }
        return current.map { expires >= $0 } ?? true
    }
}
