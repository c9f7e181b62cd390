import Foundation
import Postgres
import ReceiptCore

extension TransactionRepository {
    /// Applies a store event to transactions and subscriptions and queues what the game server
    /// is owed (webhook, refund callback in its client's format), all on `connection`, inside
    /// the caller's database transaction. True if the ledger's state moved (what a webhook tells).
    /// A refund request's answer waits `refundAnswerDelay` seconds for the game's report. What moves
    /// and what is owed is `LedgerTransition`'s rule; this carries it out in SQL.
    @discardableResult
    static func apply(
        _ event: StoreEvent, store: StoreID, appIdentifier: String?, kind: AppIdentifierKind?, clientID: String? = nil,
        refundCallbacks: [String: any RefundCallbackRenderer], refundAnswerDelay: Double = 3600, at now: Date,
        on connection: PostgresConnection
    ) throws -> Bool {
        guard let purchase = event.purchase else { return false }
        guard
            var owner = try ClientRepository.owner(
                of: purchase, appIdentifier: appIdentifier, kind: kind, clientID: clientID, on: connection)
        else { return false }
        let original = purchase.originalTransactionID ?? purchase.transactionID
        let transition = LedgerTransition(
            event.kind, purchase: purchase, autoRenew: event.autoRenew, graceUntil: event.gracePeriodExpires,
            disputeRevokes: event.dispute?.revokes == true, at: now)
        // What a player owns follows the ledger in the same transaction (a refund, a renewal, auto-renew switched off),
        // under the catalog as it is once the owner's catalog scope is held, before any write: a catalog change waits
        // for this event, or committed before it read the catalog.
        if transition.movesEntitlements {
            owner.gameCatalog = try ClientRepository.heldGameCatalog(of: owner.clientID, on: connection)
        }
        let outcome = try carryOut(
            transition, event: event, purchase: purchase, original: original, owner: owner,
            refundAnswerDelay: refundAnswerDelay, at: now, on: connection)
        let consequence = transition.consequence(of: outcome.ledger)
        if let row = outcome.row {
            try queue(
                consequence, row: row, purchase: purchase, dispute: event.dispute, owner: owner,
                refundCallbacks: refundCallbacks, on: connection)
        }
        if transition.movesEntitlements {
            try EntitlementIndex.refreshOwners(
                store: purchase.store, environment: purchase.environment, original: original,
                transactionID: purchase.transactionID, client: owner, on: connection)
        }
        return consequence.changed
    }

    /// The transition's writes, and what they did.
    private static func carryOut(
        _ transition: LedgerTransition, event: StoreEvent, purchase: VerifiedPurchase, original: String, owner: Client,
        refundAnswerDelay: Double, at now: Date, on connection: PostgresConnection
    ) throws -> (ledger: LedgerOutcome, row: TransactionRecord?) {
        var outcome = LedgerOutcome()
        var row: TransactionRecord?
        if let news = transition.transaction {
            let written = try upsert(purchase, news: news, owner: owner, on: connection)
            outcome.transaction = written.change
            row = written.row
        } else if transition.readsRow {
            row = try TransactionRows.find(
                store: purchase.store, environment: purchase.environment, transactionID: purchase.transactionID,
                clientID: owner.clientID, on: connection)
        }
        if transition.asksCurrentPeriod {
            outcome.isCurrentPeriod = try SubscriptionRepository.isCurrentPeriod(
                purchase, original: original, on: connection)
        }
        switch transition.subscription {
        case .withdraw(let status):
            try SubscriptionRepository.markRevoked(status, purchase: purchase, original: original, on: connection)
        case .reinstate:
            try SubscriptionRepository.reinstate(purchase, original: original, on: connection)
        case .extend(let autoRenew):
            // A new period, or the same transaction's end moved later (a store that renews under one id).
            outcome.subscriptionMoved = try SubscriptionRepository.upsert(
                purchase, original: original, client: owner, at: now, on: connection)
            if let autoRenew {
                try SubscriptionRepository.setAutoRenew(
                    autoRenew, purchase: purchase, original: original, on: connection)
            }
        case .status(let status, let graceUntil):
            outcome.subscriptionMoved = try SubscriptionRepository.setStatus(
                status, purchase: purchase, original: original, owner: owner, graceUntil: graceUntil, on: connection)
        case .autoRenewIfCurrent(let autoRenew):
            // Told late (read back from a history), a change of an earlier period is not the subscription's now.
            if outcome.isCurrentPeriod {
                try SubscriptionRepository.setAutoRenew(
                    autoRenew, purchase: purchase, original: original, on: connection)
            }
        case nil:
            break
        }
        if let result = transition.refundOutcome {
            try RefundRequestLedger.joinOutcome(
                result.rawValue, purchase: purchase, client: owner.clientID, on: connection)
        }
        if transition.recordsRefundRequest, let news = event.refundRequest {
            outcome.refundRequestRecorded = try RefundRequestLedger.record(
                news, purchase: purchase, owner: owner, answerDelay: refundAnswerDelay, at: now, on: connection)
        }
        return (outcome, row)
    }

    /// Queues what the game is owed: the webhook, and the refund callback in the format its client chose.
    private static func queue(
        _ consequence: LedgerConsequence, row: TransactionRecord, purchase: VerifiedPurchase, dispute: DisputeNews?,
        owner: Client, refundCallbacks: [String: any RefundCallbackRenderer], on connection: PostgresConnection
    ) throws {
        if let webhook = consequence.webhook {
            if consequence.webhookCarriesDispute, let dispute {
                try queue(
                    webhook, payload: DisputeWebhook(transaction: NativeTransaction(row), dispute: dispute),
                    transaction: row, owner: owner, on: connection)
            } else if consequence.webhookCarriesItems {
                try queue(
                    webhook, payload: ItemsRefundWebhook(transaction: NativeTransaction(row)), transaction: row,
                    owner: owner, on: connection)
            } else if consequence.webhookCarriesRefund {
                try queue(
                    webhook, payload: RefundNews(transaction: NativeTransaction(row)), transaction: row, owner: owner,
                    on: connection)
            } else {
                try queue(webhook, transaction: row, owner: owner, on: connection)
            }
        }
        // The game server's refund callback, for any transaction of the game.
        guard consequence.refundCallback, owner.refundCallbackURL != nil,
            let renderer = refundCallbacks[owner.refundCallbackFormat]
        else { return }
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

    /// The percent refunded, only for a partial refund whose share the store told (as a
    /// percentage, or as a quantity of the purchased quantity).
    private static func partialPercentage(of row: TransactionRecord) -> Double? {
        guard let refund = row.refund, refund.isPartial(ofQuantity: row.quantity) else { return nil }
        if let milliunits = refund.percentageMilliunits { return Double(milliunits) / 1000 }
        guard let quantity = refund.quantity, let purchased = row.quantity, purchased > 0 else { return nil }
        return (Double(quantity) * 100_000 / Double(purchased)).rounded() / 1000
    }

    /// Inserts the transaction in the state `news` carries (known, not claimed), or moves the
    /// existing row as `LedgerRules` says (a refund stays a refund when the period later expires)
    /// and takes the store's dates; a reversal clears the revocation. The unique key decides
    /// whether the row is new; the existing row is locked before it is read, so two notifications
    /// of one change cannot both see it unchanged.
    private static func upsert(
        _ purchase: VerifiedPurchase, news: LedgerNews, owner: Client,
        on connection: PostgresConnection
    ) throws -> (row: TransactionRecord, change: TransactionChange) {
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
            return (row, TransactionChange(before: nil, after: row))
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
        let after = try TransactionRows.transaction(updated)
        return (after, TransactionChange(before: try TransactionRows.transaction(locked), after: after))
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
                offer = COALESCE(\(PurchaseTermsColumns.text(purchase.offer))::jsonb, offer),
                commerce_items = COALESCE(\(PurchaseTermsColumns.text(purchase.items))::jsonb, commerce_items),
                commitment = COALESCE(\(PurchaseTermsColumns.text(purchase.commitment))::jsonb, commitment),
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
