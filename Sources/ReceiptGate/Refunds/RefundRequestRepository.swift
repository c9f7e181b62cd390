import Foundation
import Postgres
import ReceiptCore

/// Refund requests after they were recorded: prepared and marked answered by the outbox worker,
/// closed on schedule when their deadline passed, listed for the console.
struct RefundRequestRepository: Sendable {
    let pool: PostgresPool

    /// A pending request with everything its answer is decided from, read when it is sent, so a
    /// report the game made meanwhile counts.
    struct Prepared: Sendable {
        let id: Int64, clientID: String, status: String, deadline: Date
        let target: RefundRequestTarget
        let known: RefundAnswerRule.Known
    }

    func prepare(_ id: Int64) async throws -> Prepared? {
        guard
            let row = try await pool.query(
                """
                SELECT r.id, r.client_id, r.store, r.environment, r.transaction_id, r.app_identifier, r.answer_token, r.status, r.deadline,
                       t.id IS NOT NULL AS held,
                       -- a renewal is never claimed itself: its subscription's first period was
                       EXISTS (SELECT 1 FROM transactions o WHERE o.store = t.store AND o.environment = t.environment AND o.client_id = t.client_id
                               AND COALESCE(o.original_transaction_id, o.transaction_id) = COALESCE(t.original_transaction_id, t.transaction_id)
                               AND o.claimed_at IS NOT NULL) AS claimed,
                       c.delivered, c.consumed_milliunits, c.usage_events::text AS usage_events,
                       EXISTS (SELECT 1 FROM outbox o WHERE o.client_id = r.client_id AND o.target = 'delivery' AND o.status = 'delivered' AND NOT \(unescaped: OutboxRepository.inFlight)
                               AND o.aggregate_key = t.store || ':' || COALESCE(t.original_transaction_id, t.transaction_id)) AS delivery_acknowledged
                FROM refund_requests r
                LEFT JOIN transactions t ON t.id = r.transaction_row_id
                LEFT JOIN consumption_reports c ON c.transaction_row_id = r.transaction_row_id
                WHERE r.id = \(id)
                """
            ).first
        else { return nil }
        let delivered: Bool? = try row.decode("delivered")
        let report = try delivered.map { delivered in
            ConsumptionReport(
                delivered: delivered, consumedMilliunits: try row.decode("consumed_milliunits"),
                usageEvents: try ConsumptionReports.usageEvents(from: try row.decode("usage_events", as: String?.self)))
        }
        return Prepared(
            id: id, clientID: try row.decode("client_id"), status: try row.decode("status"),
            deadline: try row.decode("deadline"),
            target: RefundRequestTarget(
                store: StoreID(rawValue: try row.decode("store")),
                environment: try TransactionRows.typed(row, "environment", as: StoreEnvironment.self),
                transactionID: try row.decode("transaction_id"), appIdentifier: try row.decode("app_identifier"),
                answerToken: try row.decode("answer_token")),
            known: RefundAnswerRule.Known(
                held: try row.decode("held"), claimed: try row.decode("claimed"),
                deliveryAcknowledged: try row.decode("delivery_acknowledged"), report: report))
    }

    /// Takes the request for sending: false if another process has it, or it is settled. Taken
    /// before the store is called, so one request is never sent twice: a process that dies while
    /// sending leaves it `sending`, which is not sent again (`uncertain`, for the operator).
    func takeForSending(_ id: Int64) async throws -> Bool {
        try await pool.execute("UPDATE refund_requests SET status = 'sending' WHERE id = \(id) AND status = 'pending'")
            == 1
    }

    /// The store did not take the answer and says to try again (its 5xx or 429): pending again.
    func release(_ id: Int64) async throws {
        try await pool.execute("UPDATE refund_requests SET status = 'pending' WHERE id = \(id) AND status = 'sending'")
    }

    /// Settles a request: `answered` (with what was decided and sent), or `not_answered`,
    /// `refused`, `skipped`, `uncertain` (with why). The store's token is no longer needed.
    func settle(_ id: Int64, status: String, answer: RefundAnswer?, sent: Data?, why: String? = nil) async throws {
        let decided = try answer.map { String(decoding: try ConsumptionReports.encoder.encode($0), as: UTF8.self) }
        try await pool.execute(
            """
            UPDATE refund_requests SET status = \(status), answer = \(decided)::jsonb, sent_body = \(sent.map { String(decoding: $0, as: UTF8.self) })::jsonb,
                answered_at = CASE WHEN \(status) = 'answered' THEN now() END, answer_token = NULL, note = \(why.map { String($0.prefix(500)) })
            WHERE id = \(id)
            """)
    }

    /// Pending requests whose deadline passed: missed, by store (for `/metrics`).
    /// How many refund requests there are by store, status and the store's outcome (`none` yet).
    func counts() async throws -> [(store: String, status: String, outcome: String, count: Int)] {
        try await pool.query(
            """
            SELECT store, status, COALESCE(outcome, 'none') AS outcome, count(*)::int AS n FROM refund_requests GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            """
        ).map {
            (
                try $0.decode("store", as: String.self), try $0.decode("status", as: String.self),
                try $0.decode("outcome", as: String.self), try $0.decode("n", as: Int.self)
            )
        }
    }

    /// Pending requests whose deadline passed by `now` (the service's clock) become missed; the
    /// store of each, to count.
    func closeMissed(now: Date) async throws -> [String] {
        try await pool.query(
            """
            UPDATE refund_requests SET status = 'missed', answer_token = NULL WHERE status = 'pending' AND deadline < \(now) RETURNING store
            """
        ).map { try $0.decode("store", as: String.self) }
    }

    /// How long after its deadline a request with no refund seen is taken as not refunded: the
    /// stores decide within days, and a refund found later still overwrites it.
    static let undecidedDays = 14

    /// Requests whose store refunded nothing in `undecidedDays` after the deadline (a store may
    /// tell no refusal: the absence of a refund is the answer). Their count.
    @discardableResult
    func closeUndecided() async throws -> Int {
        try await pool.execute(
            """
            UPDATE refund_requests SET outcome = 'not_refunded', outcome_at = now()
            WHERE outcome IS NULL AND deadline < now() - make_interval(days => \(Self.undecidedDays))
            """)
    }

    /// One request as the console shows it.
    struct Listed: Sendable {
        let id: Int64, clientID: String, store: String, transactionID: String, productID: String?, reason: String?
        let requestedAt: Date, deadline: Date, status: String, answer: String?, answeredAt: Date?, outcome: String?
    }

    func recent(limit: Int) async throws -> [Listed] {
        try await pool.query(
            """
            SELECT id, client_id, store, transaction_id, product_id, reason, requested_at, deadline, status, answer::text AS answer, answered_at, outcome
            FROM refund_requests ORDER BY id DESC LIMIT \(limit)
            """
        ).map(Self.listed)
    }

    /// The requests a store made about one transaction, newest first.
    func requests(store: String, transactionID: String) async throws -> [Listed] {
        try await pool.query(
            """
            SELECT id, client_id, store, transaction_id, product_id, reason, requested_at, deadline, status, answer::text AS answer, answered_at, outcome
            FROM refund_requests WHERE store = \(store) AND transaction_id = \(transactionID) ORDER BY id DESC LIMIT 20
            """
        ).map(Self.listed)
    }

    private static func listed(_ row: PostgresRow) throws -> Listed {
        Listed(
            id: try row.decode("id"), clientID: try row.decode("client_id"), store: try row.decode("store"),
            transactionID: try row.decode("transaction_id"), productID: try row.decode("product_id"),
            reason: try row.decode("reason"),
            requestedAt: try row.decode("requested_at"), deadline: try row.decode("deadline"),
            status: try row.decode("status"),
            answer: try row.decode("answer"), answeredAt: try row.decode("answered_at"),
            outcome: try row.decode("outcome"))
    }

    /// Refund requests and refunds per client and product over the last 90 days.
    struct Rate: Sendable { let clientID: String, productID: String?, requests: Int, refunded: Int, declined: Int }

    func rates() async throws -> [Rate] {
        try await pool.query(
            """
            SELECT client_id, product_id, count(*)::int AS requests, count(*) FILTER (WHERE outcome = 'refunded')::int AS refunded,
                   count(*) FILTER (WHERE outcome = 'declined')::int AS declined
            FROM refund_requests WHERE created_at > now() - interval '90 days'
            GROUP BY client_id, product_id ORDER BY requests DESC LIMIT 50
            """
        ).map { row in
            Rate(
                clientID: try row.decode("client_id"), productID: try row.decode("product_id"),
                requests: try row.decode("requests"),
                refunded: try row.decode("refunded"), declined: try row.decode("declined"))
        }
    }
}

/// The game's consumption reports: the latest per transaction wins.
enum ConsumptionReports {
    static func usageEvents(from json: String?) throws -> [ConsumptionReport.UsageEvent] {
        guard let json, let data = json.data(using: .utf8) else { return [] }
        return try decoder.decode([ConsumptionReport.UsageEvent].self, from: data)
    }

    static func json(_ events: [ConsumptionReport.UsageEvent]) throws -> String {
        String(decoding: try encoder.encode(events), as: UTF8.self)
    }

    /// Reports and decided answers are stored with times in epoch milliseconds.
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder.receiptGateStorage
        encoder.dateEncodingStrategy = .millisecondsSince1970
        return encoder
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return decoder
    }
}
