import Foundation
import Postgres
import ReceiptCore

extension Ledger {
    /// Applies a store event to transactions and subscriptions, and queues the game server's
    /// webhook, all on `connection` (inside the caller's database transaction).
    static func apply(_ event: StoreEvent, store: StoreID, appIdentifier: String?, refundCallbacks: (any RefundCallbackRendering)?,
                      on connection: PostgresConnection) throws {
        guard let purchase = event.purchase else { return }
        guard let owner = try owner(of: purchase, appIdentifier: appIdentifier, on: connection) else { return }
        let original = purchase.originalTransactionID ?? purchase.transactionID
        switch event.kind {
        case .refunded, .revoked:
            let state = event.kind == .refunded ? "refunded" : "revoked"
            let row = try upsert(purchase, state: state, owner: owner, on: connection)
            try connection.execute("""
                UPDATE subscriptions SET status = \(state), revocation_date = \(purchase.revocationDate ?? Date()), updated_at = now()
                WHERE store = \(store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
                  AND latest_transaction_id = \(purchase.transactionID)
                """)
            try queue(event.kind == .refunded ? "transaction.refunded" : "transaction.revoked", transaction: row, owner: owner, on: connection)
            // The game server's refund callback, in its dialect's shape: for any transaction of the game.
            if owner.refundCallbackURL != nil, let body = refundCallbacks?.refundCallbackBody(RefundEvent(
                transactionID: purchase.transactionID, productID: purchase.productID, revocationDate: purchase.revocationDate,
                revocationReasonCode: purchase.revocationReasonCode, gameID: owner.gameID)) {
                try Outbox.enqueueRaw(connection, client: owner, type: "refund.callback",
                                      aggregateKey: "\(row.store):\(row.originalTransactionID ?? row.transactionID)", body: body, target: .refundCallback)
            }
        case .refundReversed:
            let row = try upsert(purchase, state: "active", owner: owner, clearRevocation: true, on: connection)
            try queue("transaction.refund_reversed", transaction: row, owner: owner, on: connection)
        case .renewed, .subscribed:
            let row = try upsert(purchase, state: Ledger.state(of: purchase), owner: owner, on: connection)
            try Ledger.upsertSubscription(connection, purchase: purchase, original: original, client: owner)
            if let autoRenew = event.autoRenew { try setAutoRenew(autoRenew, purchase: purchase, original: original, on: connection) }
            try queue("subscription.renewed", transaction: row, owner: owner, on: connection)
        case .expired, .gracePeriodExpired:
            try setSubscription(status: "expired", purchase: purchase, original: original, owner: owner, on: connection)
            let row = try upsert(purchase, state: "expired", owner: owner, on: connection)
            try queue("subscription.expired", transaction: row, owner: owner, on: connection)
        case .billingIssue:
            let inGrace = (event.gracePeriodExpires ?? .distantPast) > Date()
            try setSubscription(status: inGrace ? "grace_period" : "billing_retry", purchase: purchase, original: original, owner: owner,
                                graceUntil: event.gracePeriodExpires, on: connection)
            let row = try upsert(purchase, state: Ledger.state(of: purchase), owner: owner, on: connection)
            try queue("subscription.billing_issue", transaction: row, owner: owner, on: connection)
        case .renewalStatusChanged:
            if let autoRenew = event.autoRenew { try setAutoRenew(autoRenew, purchase: purchase, original: original, on: connection) }
        case .consumptionRequest, .oneTimeCharge, .test, .other:
            return
        }
    }

    /// The client a store event belongs to: the one that recorded the transaction, else the
    /// oldest enabled client that registered the app.
    private static func owner(of purchase: VerifiedPurchase, appIdentifier: String?, on connection: PostgresConnection) throws -> Client? {
        let rows = try connection.query("""
            SELECT \(unescaped: ClientStore.columns) FROM clients
            WHERE id = (SELECT client_id FROM transactions WHERE store = \(purchase.store.rawValue)
                        AND environment = \(purchase.environment.rawValue) AND transaction_id = \(purchase.transactionID))
               OR (disabled_at IS NULL AND \(appIdentifier ?? "") = ANY (bundle_ids || package_names))
            ORDER BY id = (SELECT client_id FROM transactions WHERE store = \(purchase.store.rawValue)
                        AND environment = \(purchase.environment.rawValue) AND transaction_id = \(purchase.transactionID)) DESC NULLS LAST,
                     created_at
            LIMIT 1
            """)
        return try rows.first.map(ClientStore.decode)
    }

    /// Inserts the transaction, or brings the existing row to the store's latest word.
    private static func upsert(_ purchase: VerifiedPurchase, state: String, owner: Client, clearRevocation: Bool = false,
                               on connection: PostgresConnection) throws -> LedgerTransaction {
        let rows = try connection.query("""
            INSERT INTO transactions (store, environment, transaction_id, original_transaction_id, product_id, product_kind, quantity,
                price_milliunits, currency, storefront, app_identifier, purchase_date, expires_date, revocation_date, revocation_reason,
                ownership, account_token, state, client_id, game_id)
            VALUES (\(purchase.store.rawValue), \(purchase.environment.rawValue), \(purchase.transactionID), \(purchase.originalTransactionID),
                \(purchase.productID), \(purchase.kind?.rawValue), \(purchase.quantity), \(purchase.priceMilliunits), \(purchase.currency),
                \(purchase.storefront), \(purchase.appIdentifier), \(purchase.purchaseDate), \(purchase.expiresDate), \(purchase.revocationDate),
                \(purchase.revocationReason), \(purchase.ownership?.rawValue), \(purchase.accountToken), \(state), \(owner.clientID), \(owner.gameID))
            ON CONFLICT (store, environment, transaction_id) DO UPDATE SET
                state = EXCLUDED.state,
                expires_date = COALESCE(EXCLUDED.expires_date, transactions.expires_date),
                revocation_date = CASE WHEN \(clearRevocation) THEN NULL ELSE COALESCE(EXCLUDED.revocation_date, transactions.revocation_date) END,
                revocation_reason = CASE WHEN \(clearRevocation) THEN NULL ELSE COALESCE(EXCLUDED.revocation_reason, transactions.revocation_reason) END,
                updated_at = now()
            RETURNING \(unescaped: LedgerTransaction.columns)
            """)
        return try LedgerTransaction(row: rows[0])
    }

    private static func setSubscription(status: String, purchase: VerifiedPurchase, original: String, owner: Client, graceUntil: Date? = nil,
                                        on connection: PostgresConnection) throws {
        try connection.execute("""
            INSERT INTO subscriptions (store, environment, original_transaction_id, product_id, status, expires_date,
                                       grace_period_expires_date, latest_transaction_id, client_id)
            VALUES (\(purchase.store.rawValue), \(purchase.environment.rawValue), \(original), \(purchase.productID), \(status),
                    \(purchase.expiresDate), \(graceUntil), \(purchase.transactionID), \(owner.clientID))
            ON CONFLICT (store, environment, original_transaction_id) DO UPDATE SET
                status = EXCLUDED.status,
                grace_period_expires_date = COALESCE(EXCLUDED.grace_period_expires_date, subscriptions.grace_period_expires_date),
                updated_at = now()
            """)
    }

    private static func setAutoRenew(_ autoRenew: Bool, purchase: VerifiedPurchase, original: String, on connection: PostgresConnection) throws {
        try connection.execute("""
            UPDATE subscriptions SET auto_renew = \(autoRenew), updated_at = now()
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND original_transaction_id = \(original)
            """)
    }

    private static func queue(_ type: String, transaction: LedgerTransaction, owner: Client, on connection: PostgresConnection) throws {
        guard owner.webhookURL != nil else { return }
        try Outbox.enqueue(connection, client: owner, type: type,
                           aggregateKey: "\(transaction.store):\(transaction.originalTransactionID ?? transaction.transactionID)",
                           payload: ["transaction": transaction])
    }
}
