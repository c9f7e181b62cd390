import Foundation
import Postgres
import ReceiptCore

extension TransactionRepository {
    /// Applies a store event to transactions and subscriptions and queues what the game server
    /// is owed (webhook, refund callback in its client's format), all on `connection`, inside
    /// the caller's database transaction.
    static func apply(_ event: StoreEvent, store: StoreID, appIdentifier: String?, kind: AppIdentifierKind?,
                      refundCallbacks: [String: any RefundCallbackRenderer], on connection: PostgresConnection) throws {
        guard let purchase = event.purchase else { return }
        guard let owner = try ClientRepository.owner(of: purchase, appIdentifier: appIdentifier, kind: kind, on: connection) else { return }
        let original = purchase.originalTransactionID ?? purchase.transactionID
        switch event.kind {
        case .refunded, .revoked:
            let state: TransactionState = event.kind == .refunded ? .refunded : .revoked
            let row = try upsert(purchase, news: .storeEvent(state), owner: owner, on: connection)
            try SubscriptionRepository.markRevoked(state == .refunded ? .refunded : .revoked, purchase: purchase, original: original, on: connection)
            try queue(state == .refunded ? "transaction.refunded" : "transaction.revoked", transaction: row, owner: owner, on: connection)
            // The game server's refund callback, in the format its client chose: for any transaction of the game.
            if owner.refundCallbackURL != nil, let renderer = refundCallbacks[owner.refundCallbackFormat] {
                let body = try renderer.refundCallbackBody(RefundEvent(
                    transactionID: purchase.transactionID, productID: purchase.productID, revocationDate: purchase.revocationDate,
                    revocationReasonCode: purchase.revocationReasonCode, gameID: owner.gameID))
                try OutboxRepository.enqueue(OutboxMessage(clientID: owner.clientID, target: .refundCallback, type: "refund.callback",
                                                           aggregateKey: "\(row.store.rawValue):\(row.originalOrSelf)", body: body), on: connection)
            }
        case .refundReversed:
            let row = try upsert(purchase, news: .reversal(LedgerRules.stateAfterReversal(of: purchase)), owner: owner, on: connection)
            try SubscriptionRepository.reinstate(purchase, original: original, on: connection)
            try queue("transaction.refund_reversed", transaction: row, owner: owner, on: connection)
        case .renewed, .subscribed:
            let row = try upsert(purchase, news: .storeEvent(LedgerRules.state(of: purchase)), owner: owner, on: connection)
            try SubscriptionRepository.upsert(purchase, original: original, client: owner, on: connection)
            if let autoRenew = event.autoRenew { try SubscriptionRepository.setAutoRenew(autoRenew, purchase: purchase, original: original, on: connection) }
            try queue("subscription.renewed", transaction: row, owner: owner, on: connection)
        case .expired, .gracePeriodExpired:
            try SubscriptionRepository.setStatus(.expired, purchase: purchase, original: original, owner: owner, on: connection)
            let row = try upsert(purchase, news: .storeEvent(.expired), owner: owner, on: connection)
            try queue("subscription.expired", transaction: row, owner: owner, on: connection)
        case .billingIssue:
            let inGrace = (event.gracePeriodExpires ?? .distantPast) > Date()
            try SubscriptionRepository.setStatus(inGrace ? .gracePeriod : .billingRetry, purchase: purchase, original: original, owner: owner,
                                                 graceUntil: event.gracePeriodExpires, on: connection)
            let row = try upsert(purchase, news: .storeEvent(LedgerRules.state(of: purchase)), owner: owner, on: connection)
            try queue("subscription.billing_issue", transaction: row, owner: owner, on: connection)
        case .renewalStatusChanged:
            if let autoRenew = event.autoRenew { try SubscriptionRepository.setAutoRenew(autoRenew, purchase: purchase, original: original, on: connection) }
        case .consumptionRequest, .oneTimeCharge, .test, .other:
            return
        }
    }

    /// Inserts the transaction in the state `news` carries, or moves the existing row as
    /// `LedgerRules` says (a refund stays a refund when the period later expires) and takes the
    /// store's dates; a reversal clears the revocation.
    private static func upsert(_ purchase: VerifiedPurchase, news: LedgerNews, owner: Client,
                               on connection: PostgresConnection) throws -> TransactionRecord {
        let clearRevocation = if case .reversal = news { true } else { false }
        let newRow = NewTransactionRow(purchase: purchase, state: news.state, clientID: owner.clientID, gameID: owner.gameID)
        let rows = try connection.query("""
            INSERT INTO transactions (\(unescaped: TransactionColumns.names)) VALUES (\(TransactionColumns.values(newRow)))
            ON CONFLICT (store, environment, transaction_id) DO UPDATE SET
                state = \(LedgerSQL.state(after: news)),
                expires_date = COALESCE(EXCLUDED.expires_date, transactions.expires_date),
                revocation_date = CASE WHEN \(clearRevocation) THEN NULL ELSE COALESCE(EXCLUDED.revocation_date, transactions.revocation_date) END,
                revocation_reason = CASE WHEN \(clearRevocation) THEN NULL ELSE COALESCE(EXCLUDED.revocation_reason, transactions.revocation_reason) END,
                updated_at = now()
            RETURNING \(unescaped: TransactionRows.columns)
            """)
        guard let row = rows.first else { throw PostgresError(.queryFailed, "upsert returned no row") }
        return try TransactionRows.transaction(row)
    }

    private static func queue(_ type: String, transaction: TransactionRecord, owner: Client, on connection: PostgresConnection) throws {
        guard owner.webhookURL != nil else { return }
        try OutboxRepository.enqueue(event: type, payload: ["transaction": NativeTransaction(transaction)], client: owner.clientID,
                                     aggregateKey: "\(transaction.store.rawValue):\(transaction.originalOrSelf)", on: connection)
    }
}
