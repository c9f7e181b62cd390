import Foundation
import Postgres
import ReceiptCore

extension TransactionRepository {
    /// Applies a store event to transactions and subscriptions and queues what the game server
    /// is owed (webhook, refund callback in its client's format), all on `connection`, inside
    /// the caller's database transaction. True if the ledger's state moved (what a webhook tells).
    @discardableResult
    /// A refund request's answer waits `refundAnswerDelay` seconds for the game's report.
    static func apply(
        _ event: StoreEvent, store: StoreID, appIdentifier: String?, kind: AppIdentifierKind?,
        refundCallbacks: [String: any RefundCallbackRenderer], refundAnswerDelay: Double = 3600,
        on connection: PostgresConnection
    ) throws -> Bool {
        guard let purchase = event.purchase else { return false }
        guard
            var owner = try ClientRepository.owner(
                of: purchase, appIdentifier: appIdentifier, kind: kind, on: connection)
        else { return false }
        let original = purchase.originalTransactionID ?? purchase.transactionID
        let movesEntitlements: Bool
        switch event.kind {
        case .refunded, .revoked, .refundReversed, .renewed, .subscribed, .expired, .gracePeriodExpired, .billingIssue,
            .renewalStatusChanged:
            movesEntitlements = true
        case .consumptionRequest, .refundDeclined, .oneTimeCharge, .test, .other:
            movesEntitlements = false
        }
        // What a player owns follows the ledger in the same transaction (a refund, a renewal, auto-renew switched off),
        // under the catalog as it is once the owner's catalog scope is held, before any write: a catalog change waits
        // for this event, or committed before it read the catalog.
        if movesEntitlements {
            owner.gameCatalog = try ClientRepository.heldGameCatalog(of: owner.clientID, on: connection)
        }
        let changed = try apply(
            event, purchase: purchase, original: original, owner: owner, refundCallbacks: refundCallbacks,
            refundAnswerDelay: refundAnswerDelay, on: connection)
        if movesEntitlements {
            try EntitlementIndex.refreshOwners(
                store: purchase.store, environment: purchase.environment, original: original,
                transactionID: purchase.transactionID, client: owner, on: connection)
        }
        return changed
    }

    private static func apply(
        _ event: StoreEvent, purchase: VerifiedPurchase, original: String, owner: Client,
        refundCallbacks: [String: any RefundCallbackRenderer], refundAnswerDelay: Double,
        on connection: PostgresConnection
    ) throws -> Bool {
        switch event.kind {
        case .refunded, .revoked:
            let state: TransactionState = event.kind == .refunded ? .refunded : .revoked
            let change = try upsert(purchase, news: .storeEvent(state), owner: owner, on: connection)
            try SubscriptionRepository.markRevoked(
                state == .refunded ? .refunded : .revoked, purchase: purchase, original: original, on: connection)
            if state == .refunded {
                try RefundRequestLedger.joinOutcome(
                    "refunded", purchase: purchase, client: owner.clientID, on: connection)
            }
            // The same refund told twice (a new notification id, a poll finding it again) is one event.
            guard change.refundChanged else { return false }
            let row = change.row
            try queue(
                state == .refunded ? "transaction.refunded" : "transaction.revoked",
                payload: RefundNews(transaction: NativeTransaction(row)),
                transaction: row, owner: owner, on: connection)
            // The game server's refund callback, in the format its client chose: for any transaction of the game.
            if owner.refundCallbackURL != nil, let renderer = refundCallbacks[owner.refundCallbackFormat] {
                let body = try renderer.refundCallbackBody(
                    RefundEvent(
                        transactionID: purchase.transactionID, productID: purchase.productID,
                        revocationDate: purchase.revocationDate,
                        revocationReasonCode: purchase.revocationReasonCode, gameID: owner.gameID,
                        partialPercentage: Self.partialPercentage(of: row)))
                try OutboxRepository.enqueue(
                    OutboxMessage(
                        clientID: owner.clientID, target: .refundCallback, type: "refund.callback",
                        aggregateKey: "\(row.store.rawValue):\(row.originalOrSelf)", body: body), on: connection)
            }
            return true
        case .refundReversed:
            let change = try upsert(
                purchase, news: .reversal(LedgerRules.stateAfterReversal(of: purchase)), owner: owner, on: connection)
            try SubscriptionRepository.reinstate(purchase, original: original, on: connection)
            if change.stateChanged {
                try queue("transaction.refund_reversed", transaction: change.row, owner: owner, on: connection)
            }
            return change.stateChanged
        case .renewed, .subscribed:
            let change = try upsert(
                purchase, news: .storeEvent(LedgerRules.state(of: purchase)), owner: owner, on: connection)
            // A new period, or the same transaction's end moved later (a store that renews under one id).
            let extended = try SubscriptionRepository.upsert(
                purchase, original: original, client: owner, on: connection)
            if let autoRenew = event.autoRenew {
                try SubscriptionRepository.setAutoRenew(
                    autoRenew, purchase: purchase, original: original, on: connection)
            }
            let changed = change.stateChanged || extended
            if changed { try queue("subscription.renewed", transaction: change.row, owner: owner, on: connection) }
            return changed
        case .expired, .gracePeriodExpired:
            let moved = try SubscriptionRepository.setStatus(
                .expired, purchase: purchase, original: original, owner: owner, on: connection)
            let change = try upsert(purchase, news: .storeEvent(.expired), owner: owner, on: connection)
            // An earlier period's expiry told late moves that period's row, not the subscription.
            let current = try SubscriptionRepository.isCurrentPeriod(purchase, original: original, on: connection)
            let changed = moved || (change.stateChanged && current)
            if changed { try queue("subscription.expired", transaction: change.row, owner: owner, on: connection) }
            return changed
        case .billingIssue:
            let inGrace = (event.gracePeriodExpires ?? .distantPast) > Date()
            let moved = try SubscriptionRepository.setStatus(
                inGrace ? .gracePeriod : .billingRetry, purchase: purchase, original: original, owner: owner,
                graceUntil: event.gracePeriodExpires, on: connection)
            let change = try upsert(
                purchase, news: .storeEvent(LedgerRules.state(of: purchase)), owner: owner, on: connection)
            let current = try SubscriptionRepository.isCurrentPeriod(purchase, original: original, on: connection)
            let changed = moved || (change.stateChanged && current)
            if changed {
                try queue("subscription.billing_issue", transaction: change.row, owner: owner, on: connection)
            }
            return changed
        case .renewalStatusChanged:
            // Told late (read back from a history), a change of an earlier period is not the subscription's now.
            if let autoRenew = event.autoRenew,
                try SubscriptionRepository.isCurrentPeriod(purchase, original: original, on: connection)
            {
                try SubscriptionRepository.setAutoRenew(
                    autoRenew, purchase: purchase, original: original, on: connection)
            }
            return false
        case .consumptionRequest:
            // Known or not, the request is recorded and answered; the ledger's row is not created by it.
            guard let news = event.refundRequest else { return false }
            return try RefundRequestLedger.record(
                news, purchase: purchase, owner: owner, answerDelay: refundAnswerDelay, on: connection)
        case .refundDeclined:
            try RefundRequestLedger.joinOutcome("declined", purchase: purchase, client: owner.clientID, on: connection)
            return false
        case .oneTimeCharge, .test, .other:
            return false
        }
    }

    /// The percent refunded, only for a partial refund whose share the store told (as a
    /// percentage, or as a quantity of the purchased quantity).
    private static func partialPercentage(of row: TransactionRecord) -> Double? {
        guard let refund = row.refund, refund.isPartial(ofQuantity: row.quantity) else { return nil }
        if let milliunits = refund.percentageMilliunits { return Double(milliunits) / 1000 }
        guard let quantity = refund.quantity, let purchased = row.quantity, purchased > 0 else { return nil }
        return (Double(quantity) * 100_000 / Double(purchased)).rounded() / 1000
    }

    /// The row after a store's news, and whether the news changed it: events follow changes of
    /// state, never the number of notifications that told of one.
    struct StoreChange {
        let row: TransactionRecord
        /// The row is new, or its state moved.
        let stateChanged: Bool
        /// The row is newly withdrawn, or the store now says a different share was refunded.
        let refundChanged: Bool
    }

    /// Inserts the transaction in the state `news` carries (known, not claimed), or moves the
    /// existing row as `LedgerRules` says (a refund stays a refund when the period later expires)
    /// and takes the store's dates; a reversal clears the revocation. The unique key decides
    /// whether the row is new; the existing row is locked before it is read, so two notifications
    /// of one change cannot both see it unchanged.
    private static func upsert(
        _ purchase: VerifiedPurchase, news: LedgerNews, owner: Client,
        on connection: PostgresConnection
    ) throws -> StoreChange {
        let newRow = NewTransactionRow(
            purchase: purchase, state: news.state, clientID: owner.clientID, gameID: owner.gameID)
        if let inserted = try connection.query(
            """
            INSERT INTO transactions (\(unescaped: TransactionColumns.names)) VALUES (\(TransactionColumns.values(newRow)))
            ON CONFLICT (store, environment, transaction_id) DO NOTHING
            RETURNING \(unescaped: TransactionRows.columns)
            """
        ).first {
            let row = try TransactionRows.transaction(inserted)
            return StoreChange(row: row, stateChanged: true, refundChanged: row.state.isWithdrawn)
        }
        let key: PostgresQuery = """
            store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND transaction_id = \(purchase.transactionID)
            """
        guard
            let locked = try connection.query(
                "SELECT \(unescaped: TransactionRows.columns) FROM transactions WHERE \(key) FOR UPDATE"
            ).first,
            let updated = try connection.query(Self.update(purchase, news: news, where: key)).first
        else {
            throw PostgresError(.queryFailed, "the transaction row vanished under its lock")
        }
        let before = try TransactionRows.transaction(locked), after = try TransactionRows.transaction(updated)
        let newlyWithdrawn = after.state.isWithdrawn && !before.state.isWithdrawn
        return StoreChange(
            row: after, stateChanged: before.state != after.state,
            refundChanged: newlyWithdrawn || (after.state.isWithdrawn && before.refund != after.refund))
    }

    private static func update(
        _ purchase: VerifiedPurchase, news: LedgerNews, where key: PostgresQuery
    ) -> PostgresQuery {
        let clear = if case .reversal = news { true } else { false }
        let refund = purchase.refund
        return """
            UPDATE transactions SET
                state = \(LedgerSQL.state(after: news)),
                expires_date = COALESCE(\(purchase.expiresDate)::timestamptz, expires_date),
                app_transaction_id = COALESCE(app_transaction_id, \(purchase.appTransactionID)::text),
                revocation_date = CASE WHEN \(clear) THEN NULL ELSE COALESCE(\(purchase.revocationDate)::timestamptz, revocation_date) END,
                revocation_reason = CASE WHEN \(clear) THEN NULL ELSE COALESCE(\(purchase.revocationReason)::text, revocation_reason) END,
                refund_store_type = CASE WHEN \(clear) THEN NULL ELSE COALESCE(\(refund?.storeType)::text, refund_store_type) END,
                refund_partial = CASE WHEN \(clear) THEN NULL ELSE COALESCE(\(refund?.storeSaysPartial)::boolean, refund_partial) END,
                refund_percentage_milliunits = CASE WHEN \(clear) THEN NULL
                    ELSE COALESCE(\(refund?.percentageMilliunits)::integer, refund_percentage_milliunits) END,
                refunded_quantity = CASE WHEN \(clear) THEN NULL ELSE COALESCE(\(refund?.quantity)::integer, refunded_quantity) END,
                updated_at = now()
            WHERE \(key)
            RETURNING \(unescaped: TransactionRows.columns)
            """
    }

    private static func queue(
        _ type: String, transaction: TransactionRecord, owner: Client, on connection: PostgresConnection
    ) throws {
        try queue(
            type, payload: ["transaction": NativeTransaction(transaction)], transaction: transaction, owner: owner,
            on: connection)
    }

    private static func queue(
        _ type: String, payload: some Encodable, transaction: TransactionRecord, owner: Client,
        on connection: PostgresConnection
    ) throws {
        guard owner.webhookURL != nil else { return }
        try OutboxRepository.enqueue(
            event: type, payload: payload, client: owner.clientID,
            aggregateKey: "\(transaction.store.rawValue):\(transaction.originalOrSelf)", on: connection)
    }
}
