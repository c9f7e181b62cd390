import Foundation
import Postgres
import ReceiptCore

extension OperatorQueries {
    /// `failed`: dead, or pending after at least one failed try; `pending`: not yet delivered; `all`.
    func deliveries(
        status: String, clientID: String?, type: String?, limit: Int = 200
    ) async throws -> [OutboxRepository.Event] {
        // What is in flight is found through its batches, not by a filter no index serves.
        try await pool.query(
            """
            SELECT * FROM (
                SELECT id, \(unescaped: OutboxRepository.eventColumns) FROM outbox
                WHERE (\(status) = 'all' OR (\(status) = 'pending' AND status = 'pending')
                       OR (\(status) = 'failed' AND \(unescaped: OutboxRepository.failedCondition)))
                  AND (\(clientID)::text IS NULL OR client_id = \(clientID)) AND (\(type)::text IS NULL OR event_type = \(type))
                UNION ALL
                SELECT o.id, \(unescaped: OutboxRepository.eventColumns) FROM \(unescaped: OutboxRepository.inFlightRows)
                WHERE \(status) = 'pending'
                  AND (\(clientID)::text IS NULL OR client_id = \(clientID)) AND (\(type)::text IS NULL OR event_type = \(type))
            ) listed
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map(OutboxRepository.event)
    }

    /// Queues every failed message of the client for another delivery now; how many.
    func redeliverFailed(clientID: String) async throws -> Int {
        var total = 0
        // A few hundred aggregates a transaction: each holds an advisory lock until its commit.
        while true {
            let moved = try await pool.withTransaction { connection -> Int in
                let aggregates = try OutboxHeads.aggregates(
                    try connection.query(
                        """
                        SELECT DISTINCT client_id, aggregate_key, target FROM outbox
                        WHERE client_id = \(clientID) AND \(unescaped: OutboxRepository.failedCondition) AND (lease_until IS NULL OR lease_until < now())
                          AND (status = 'dead' OR next_attempt_at > now())
                        LIMIT 200
                        """))
                var count = 0
                try OutboxHeads.moving(aggregates, on: connection) {
                    // Under the locks: only these aggregates' failed messages, none being sent now.
                    count = try connection.execute(
                        """
                        UPDATE outbox SET status = 'pending', next_attempt_at = now(), lease_until = NULL, handed_in = NULL
                        WHERE client_id = \(clientID) AND aggregate_key = ANY (\(aggregates.map(\.aggregateKey))::text[])
                          AND \(unescaped: OutboxRepository.failedCondition) AND (lease_until IS NULL OR lease_until < now())
                          AND (status = 'dead' OR next_attempt_at > now())
                        """)
                }
                return count
            }
            total += moved
            if moved == 0 { return total }
        }
    }

    struct Backlog: Sendable {
        let pending: Int, failed: Int, oldestPending: Date?, refundsLastDay: Int
    }

    func backlog() async throws -> Backlog {
        let row = try await pool.query(
            """
            SELECT (SELECT count(*) FROM outbox WHERE status = 'pending')
                       + (SELECT count(*) FROM \(unescaped: OutboxRepository.inFlightRows)) AS pending,
                   (SELECT count(*) FROM outbox WHERE \(unescaped: OutboxRepository.failedCondition)) AS failed,
                   LEAST((SELECT min(created_at) FROM outbox WHERE status = 'pending'),
                         (SELECT min(o.created_at) FROM \(unescaped: OutboxRepository.inFlightRows))) AS oldest,
                   (SELECT count(*) FROM transactions WHERE state = 'refunded' AND updated_at > now() - interval '24 hours') AS refunds
            """)[0]
        return Backlog(
            pending: Int(try row.decode("pending", as: Int64.self)),
            failed: Int(try row.decode("failed", as: Int64.self)),
            oldestPending: try row.decode("oldest"), refundsLastDay: Int(try row.decode("refunds", as: Int64.self)))
    }

    struct Account: Sendable {
        let id: String, clientID: String, scope: String, username: String, email: String?, emailVerified: Bool,
            createdAt: Date
    }

    /// Accounts whose id is `text` or whose e-mail is `text` (any case), in every game.
    func accounts(matching text: String) async throws -> [Account] {
        try await pool.query(
            """
            SELECT id, client_id, scope, username, email, email_verified, created_at FROM accounts
            WHERE id = \(text) OR lower(email) = lower(\(text)) ORDER BY created_at LIMIT 20
            """
        ).map { row in
            Account(
                id: try row.decode("id"), clientID: try row.decode("client_id"), scope: try row.decode("scope"),
                username: try row.decode("username"), email: try row.decode("email"),
                emailVerified: try row.decode("email_verified"),
                createdAt: try row.decode("created_at"))
        }
    }

    /// The purchases linked to the account, with the ledger's row when it has one.
    func linkedPurchases(
        accountID: String
    ) async throws -> [(store: String, original: String, linkedAt: Date, purchase: Purchase?)] {
        try await pool.query(
            """
            SELECT l.store AS link_store, l.original_transaction_id AS link_original, l.created_at AS linked_at, t.*
            FROM account_links l
            LEFT JOIN LATERAL (SELECT \(unescaped: Self.purchaseColumns) FROM transactions x
                               WHERE x.store = l.store AND COALESCE(x.original_transaction_id, x.transaction_id) = l.original_transaction_id
                               ORDER BY x.id DESC LIMIT 1) t ON true
            WHERE l.account_id = \(accountID) ORDER BY l.created_at LIMIT 200
            """
        ).map { row in
            let hasRow = try row.decode("id", as: Int64?.self) != nil
            return (
                try row.decode("link_store"), try row.decode("link_original"), try row.decode("linked_at"),
                hasRow ? try Self.purchase(row) : nil
            )
        }
    }

    struct TokenFamily: Sendable {
        let family: String, kinds: String, issued: Int, live: Bool, lastExpiry: Date
    }

    func tokenFamilies(accountID: String) async throws -> [TokenFamily] {
        try await pool.query(
            """
            SELECT family, string_agg(DISTINCT kind, ', ') AS kinds, count(*) AS issued, max(expires_at) AS last_expiry,
                   bool_or(revoked_at IS NULL AND spent_at IS NULL AND expires_at > now()) AS live
            FROM tokens WHERE account_id = \(accountID) GROUP BY family ORDER BY max(created_at) DESC LIMIT 100
            """
        ).map { row in
            TokenFamily(
                family: try row.decode("family"), kinds: try row.decode("kinds"),
                issued: Int(try row.decode("issued", as: Int64.self)),
                live: try row.decode("live"), lastExpiry: try row.decode("last_expiry"))
        }
    }

    /// Revokes every token the account holds: each of its sessions must sign in again. How many tokens.
    func revokeSessions(accountID: String) async throws -> Int {
        try await pool.execute(
            """
            UPDATE tokens SET revoked_at = clock_timestamp() WHERE account_id = \(accountID) AND revoked_at IS NULL
            """)
    }

    struct Notification: Sendable {
        let receivedAt: Date, store: String, type: String, subtype: String?, transactionID: String?, processed: Bool
        let notice: String?, noticeFields: [(name: String, value: String)]
    }

    /// The newest 100 store notifications, with what any of them asks of the operator.
    func notifications(limit: Int = 100) async throws -> [Notification] {
        try await pool.query(
            """
            SELECT received_at, store, notification_type, subtype, COALESCE(transaction_id, original_transaction_id) AS transaction_id,
                   processed_at IS NOT NULL AS processed, operator_notice->>'message' AS notice, (operator_notice->'fields')::text AS fields
            FROM store_notifications ORDER BY id DESC LIMIT \(limit)
            """
        ).map { row in
            let fields =
                (try row.decode("fields", as: String?.self)).flatMap { text in
                    try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String]
                } ?? [:]
            return Notification(
                receivedAt: try row.decode("received_at"), store: try row.decode("store"),
                type: try row.decode("notification_type"),
                subtype: try row.decode("subtype"), transactionID: try row.decode("transaction_id"),
                processed: try row.decode("processed"),
                notice: try row.decode("notice"),
                noticeFields: fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        }
    }
}

extension OperatorQueries {
    /// The game's latest consumption report about the purchase, when it sent one.
    func consumptionReport(of purchase: Purchase) async throws -> (report: ConsumptionReport, receivedAt: Date)? {
        try await pool.query(
            """
            SELECT delivered, consumed_milliunits, usage_events::text AS usage_events, reported_at
            FROM consumption_reports WHERE transaction_row_id = \(purchase.record.managementID)
            """
        ).first.map { row in
            (
                ConsumptionReport(
                    delivered: try row.decode("delivered"), consumedMilliunits: try row.decode("consumed_milliunits"),
                    usageEvents: try ConsumptionReports.usageEvents(
                        from: try row.decode("usage_events", as: String?.self))),
                try row.decode("reported_at")
            )
        }
    }
}
