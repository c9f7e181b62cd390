import Foundation
import Postgres
import ReceiptCore

/// Refund requests as they arrive with a store's notification: recorded once, told to the game,
/// and their answer queued. Called inside the notification's database transaction.
enum RefundRequestLedger {
    /// Records `news` for the purchase it names (which the ledger may not hold), queues the signed
    /// `refund.requested` webhook and the answer, due after `answerDelay` seconds and always before
    /// the store's deadline. False if the store had asked this before.
    static func record(
        _ news: RefundRequestNews, purchase: VerifiedPurchase, owner: Client, answerDelay: Double, at now: Date,
        on connection: PostgresConnection
    ) throws -> Bool {
        let row = try connection.query(
            """
            SELECT \(unescaped: TransactionRows.columns) FROM transactions
            WHERE store = \(purchase.store.rawValue) AND transaction_id = \(purchase.transactionID) AND client_id = \(owner.clientID)
            ORDER BY environment = \(purchase.environment.rawValue) DESC LIMIT 1
            """
        ).first.map(TransactionRows.transaction)
        let earlier: Int? = try row?.claim?.claimant.playerID.map { player in
            try connection.query(
                """
                SELECT count(*)::int AS n FROM transactions
                WHERE client_id = \(owner.clientID) AND player_id = \(player) AND state IN ('refunded', 'revoked') AND id <> \(row?.managementID ?? 0)
                """
            ).first?.decode("n", as: Int.self) ?? 0
        }
        let due = answerDue(now: now, deadline: news.deadline, delay: answerDelay)
        guard
            let id = try connection.query(
                """
                INSERT INTO refund_requests (client_id, store, environment, request_id, transaction_id, transaction_row_id, product_id, app_identifier,
                                             answer_token, reason, earlier_refunds, requested_at, deadline)
                VALUES (\(owner.clientID), \(purchase.store.rawValue), \((row?.environment ?? purchase.environment).rawValue), \(news.requestID),
                        \(purchase.transactionID), \(row?.managementID), \(row?.productID ?? purchase.productID), \(purchase.appIdentifier),
                        \(news.answerToken), \(news.reason), \(earlier), \(news.requestedAt), \(news.deadline))
                ON CONFLICT (store, request_id) DO NOTHING
                RETURNING id
                """
            ).first?.decode("id", as: Int64.self)
        else { return false }
        let request = RequestedRefund(
            id: id, store: purchase.store.rawValue, transactionID: purchase.transactionID, reason: news.reason,
            requestedAt: news.requestedAt, deadline: news.deadline, answerDue: due, earlierRefunds: earlier,
            ledgerHolds: row != nil)
        if owner.webhookURL != nil {
            try OutboxRepository.enqueue(
                event: "refund.requested",
                payload: RefundRequested(request: request, transaction: row.map { NativeTransaction($0) }),
                client: owner.clientID,
                aggregateKey: "\(purchase.store.rawValue):\(row?.originalOrSelf ?? purchase.transactionID)",
                on: connection)
        }
        let body = try JSONEncoder.receiptGateStorage.encode(["request_id": id])
        try OutboxRepository.enqueue(
            OutboxMessage(
                clientID: owner.clientID, target: .refundAnswer, type: "refund.answer",
                aggregateKey: "refund_request:\(id)", body: body), notBefore: due, on: connection)
        return true
    }

    /// When the answer goes: after the delay (time for the game to report), and never later than a
    /// quarter of the time left (at most an hour) before the deadline, so retries still fit.
    static func answerDue(now: Date, deadline: Date, delay: Double) -> Date {
        let left = deadline.timeIntervalSince(now)
        let latest = deadline.addingTimeInterval(-min(3600, max(left, 0) / 4))
        return max(now, min(now.addingTimeInterval(delay), latest))
    }

    /// The store decided: `refunded` (a refund of the transaction) or `declined`. Joined to the
    /// request still without an outcome, or taken as not refunded for want of news (a refund
    /// seen later is what happened).
    static func joinOutcome(
        _ outcome: String, purchase: VerifiedPurchase, client: String, on connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            UPDATE refund_requests SET outcome = \(outcome), outcome_at = now()
            WHERE store = \(purchase.store.rawValue) AND transaction_id = \(purchase.transactionID) AND client_id = \(client)
              AND environment = \(purchase.environment.rawValue)
              AND (outcome IS NULL OR (outcome = 'not_refunded' AND \(outcome) = 'refunded'))
            """)
    }

    /// The request as the `refund.requested` webhook and the console tell it.
    struct RequestedRefund: Encodable {
        let id: Int64, store: String, transactionID: String, reason: String?
        let requestedAt: Date, deadline: Date, answerDue: Date
        let earlierRefunds: Int?
        let ledgerHolds: Bool

        enum CodingKeys: String, CodingKey {
            case id, store, transactionID = "transaction_id", reason, requestedAt = "requested_at_ms", deadline =
                "deadline_ms"
            case answerDue = "answer_due_ms", earlierRefunds = "player_earlier_refunds", ledgerHolds =
                "ledger_holds_transaction"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(store, forKey: .store)
            try container.encode(transactionID, forKey: .transactionID)
            try container.encode(reason, forKey: .reason)
            try container.encode(Int64(requestedAt.timeIntervalSince1970 * 1000), forKey: .requestedAt)
            try container.encode(Int64(deadline.timeIntervalSince1970 * 1000), forKey: .deadline)
            try container.encode(Int64(answerDue.timeIntervalSince1970 * 1000), forKey: .answerDue)
            try container.encode(earlierRefunds, forKey: .earlierRefunds)
            try container.encode(ledgerHolds, forKey: .ledgerHolds)
        }
    }

    struct RefundRequested: Encodable {
        let request: RequestedRefund
        let transaction: NativeTransaction?
    }
}
