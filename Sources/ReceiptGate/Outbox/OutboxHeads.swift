import Postgres
import ReceiptCore

/// Order within an aggregate (the messages about one purchase, for one client and target): only
/// its oldest pending message, its head, may be sent, and every head is marked (`is_head`), so a
/// claim reads due heads from their own index instead of searching the backlog for them.
///
/// A message is written unplaced, with no lock taken in the writer's transaction (a verification
/// holds other locks, and must not wait on the outbox's). The worker then *places* new messages:
/// under the advisory lock of each (client, aggregate key), taken in one order (by its hash), it
/// marks the oldest pending message of each of its targets the head and the rest not. Whatever
/// takes a message out of the pending state, or brings one back, reseats its aggregate under the
/// same lock, but a handed message going back to pending (`OutboxRepository.backToPending`) or
/// taken back from a stopped sender: nothing of its aggregate was placed while it was in flight.
/// Each lock is taken by a statement of its own, so (READ COMMITTED) what follows sees
/// everything the previous holder committed.
///
/// The statements every delivery runs (lock, try-lock, reseat) are prepared once per connection:
/// planning them cost Postgres more than running them. A prepared plan is made once for any
/// batch and backlog, so each aggregate is read by its own index lookup, fenced (`OFFSET 0`) so no
/// plan made while little was pending joins against every pending entry instead.
enum OutboxHeads {
    /// The lock class, the first key of the two-key form ("RGOB"), apart from every other lock.
    static let lockClass: Int32 = 0x5247_4F42

    struct Aggregate: Hashable, Sendable {
        let clientID: String, aggregateKey: String, target: String
    }

    /// Holds the locks of `aggregates` (one per client and aggregate key) until the transaction
    /// ends, in the order of their hashes, so two holders of overlapping sets never deadlock.
    static func lock(_ aggregates: [Aggregate], on connection: PostgresConnection) throws {
        guard !aggregates.isEmpty else { return }
        try connection.query(
            """
            SELECT pg_advisory_xact_lock(\(lockClass), k) FROM (
                SELECT DISTINCT hashtext(c || '/' || a) AS k FROM unnest(\(aggregates.map(\.clientID))::text[], \(aggregates.map(\.aggregateKey))::text[]) AS x(c, a)
                ORDER BY 1) keys
            """, preparedAs: "receiptgate_outbox_lock")
    }

    /// Takes the locks of `aggregates` that are free, without waiting (a writer that must not wait
    /// on the outbox's work); the aggregates whose locks it holds until the transaction ends. A
    /// statement of its own, so what follows sees everything the previous holder committed.
    static func tryLock(_ aggregates: [Aggregate], on connection: PostgresConnection) throws -> Set<Aggregate> {
        guard !aggregates.isEmpty else { return [] }
        let rows = try connection.query(
            """
            SELECT c, a FROM unnest(\(aggregates.map(\.clientID))::text[], \(aggregates.map(\.aggregateKey))::text[]) AS x(c, a)
            WHERE pg_try_advisory_xact_lock(\(lockClass), hashtext(c || '/' || a))
            """, preparedAs: "receiptgate_outbox_try_lock")
        let granted = Set(
            try rows.map { "\(try $0.decode("c", as: String.self))/\(try $0.decode("a", as: String.self))" })
        return Set(aggregates.filter { granted.contains("\($0.clientID)/\($0.aggregateKey)") })
    }

    /// Marks the oldest pending message of each of `aggregates` its head and every other pending
    /// one not, all of them placed; or, while a message of the aggregate (and target) is in flight
    /// from a handed batch (`OutboxRepository.inFlight`), leaves its pending messages unplaced and
    /// none the head: they wait for it to be settled, and a later placing (each claim's) finds
    /// them. Call under `lock`. Each aggregate's pending messages are read by its own index lookup
    /// and rows are updated by id: the plan does not depend on how many messages the statistics
    /// say are pending (a count that swings from none to a backlog, and with which a join planned
    /// for one pending row read the whole backlog once per row). The update names rows by id
    /// alone: `status = 'pending'` there would let Postgres pick a pending-only index it believes
    /// empty and scan the whole backlog for each row. They were pending when read, and under the
    /// aggregate's lock nothing else takes them out of it.
    static func reseat(_ aggregates: [Aggregate], on connection: PostgresConnection) throws {
        guard !aggregates.isEmpty else { return }
        try connection.query(
            """
            WITH wanted AS (
                SELECT DISTINCT c, a FROM unnest(\(aggregates.map(\.clientID))::text[], \(aggregates.map(\.aggregateKey))::text[]) AS x(c, a)
            ), in_flight AS MATERIALIZED (
                SELECT DISTINCT w.c, w.a, h.target FROM wanted w CROSS JOIN LATERAL (
                    SELECT o.target FROM outbox o JOIN outbox_handed b ON b.first_id = o.handed_in
                    WHERE o.aggregate_key = w.a AND o.client_id = w.c AND o.status = 'delivered' OFFSET 0) h
            ), pending AS MATERIALIZED (
                SELECT p.id, p.target, p.is_head, p.placed, p.leased, w.c, w.a,
                       EXISTS (SELECT 1 FROM in_flight f WHERE f.c = w.c AND f.a = w.a AND f.target = p.target) AS behind
                FROM wanted w CROSS JOIN LATERAL (
                    SELECT o.id, o.target, o.is_head, o.placed, o.lease_until > now() AS leased FROM outbox o
                    WHERE o.client_id = w.c AND o.aggregate_key = w.a AND o.status = 'pending' OFFSET 0) p
            ), heads AS (
                -- A message being sent stays the head (an older one committed late waits for it).
                SELECT c, a, target, bool_or(behind) AS behind, COALESCE(min(id) FILTER (WHERE leased), min(id)) AS id
                FROM pending GROUP BY c, a, target
            ), changed AS MATERIALIZED (
                SELECT p.id, NOT h.behind AND p.id = h.id AS head, NOT h.behind AS placed
                FROM pending p JOIN heads h ON h.c = p.c AND h.a = p.a AND h.target = p.target
                WHERE p.placed IS DISTINCT FROM NOT h.behind OR p.is_head IS DISTINCT FROM (NOT h.behind AND p.id = h.id)
            )
            UPDATE outbox o SET is_head = ch.head, placed = ch.placed
            FROM changed ch
            WHERE o.id = ch.id
            """, preparedAs: "receiptgate_outbox_reseat_behind")
    }

    /// Runs `change` (which moves messages of `aggregates` into or out of the pending state) under
    /// their locks, then reseats them.
    static func moving(_ aggregates: [Aggregate], on connection: PostgresConnection, _ change: () throws -> Void) throws
    {
        try lock(aggregates, on: connection)
        try change()
        try reseat(aggregates, on: connection)
    }

    /// Places up to `limit` messages written since the last placing (and the rest of their
    /// aggregates); how many aggregates it placed. Those behind a message in flight are passed
    /// over (looked at, not locked), so however many wait for one, the rest are placed.
    static func place(limit: Int, on connection: PostgresConnection) throws -> Int {
        let aggregates = try aggregates(
            try connection.query(
                """
                SELECT DISTINCT client_id, aggregate_key, target FROM (
                    SELECT u.client_id, u.aggregate_key, u.target FROM outbox u
                    WHERE u.status = 'pending' AND NOT u.placed AND NOT \(unescaped: OutboxRepository.inFlightInAggregate(of: "u"))
                    ORDER BY u.id LIMIT \(limit)) fresh
                """))
        try moving(aggregates, on: connection) {}
        return aggregates.count
    }

    /// Where a healing pass stands: an aggregate, in the order of the pending messages' index.
    struct Position: Sendable, Equatable {
        let clientID: String
        let aggregateKey: String
        let target: String
    }

    /// Aggregates with messages pending and none of them the head, placed already (written by a
    /// process of the version before this bookkeeping, during a rolling upgrade): reseated. A
    /// safety net run by the upkeep, a page of `pageSize` pending messages at a time after `after`
    /// in their index's order, so a run costs the same however long the backlog; returns where the
    /// page ended, nil once a pass reached the end (the next starts over). An aggregate the page
    /// cuts short is judged by its first messages: reseating one that had a head changes nothing.
    static func heal(
        after: Position?, pageSize: Int, on connection: PostgresConnection
    ) throws -> (healed: Int, next: Position?) {
        let from = after ?? Position(clientID: "", aggregateKey: "", target: "")
        let rows = try connection.query(
            """
            SELECT client_id, aggregate_key, target, placed, is_head FROM outbox
            WHERE status = 'pending' AND (client_id, aggregate_key, target) > (\(from.clientID), \(from.aggregateKey), \(from.target))
            ORDER BY client_id, aggregate_key, target, id LIMIT \(pageSize)
            """)
        var headless: [Aggregate] = [], seen: Set<Aggregate> = [], headed: Set<Aggregate> = []
        for row in rows where try row.decode("placed", as: Bool.self) {
            let aggregate = Aggregate(
                clientID: try row.decode("client_id"), aggregateKey: try row.decode("aggregate_key"),
                target: try row.decode("target"))
            if seen.insert(aggregate).inserted { headless.append(aggregate) }
            if try row.decode("is_head", as: Bool.self) { headed.insert(aggregate) }
        }
        headless.removeAll { headed.contains($0) }
        try moving(headless, on: connection) {}
        guard rows.count == pageSize, let last = rows.last else { return (headless.count, nil) }
        return (
            headless.count,
            Position(
                clientID: try last.decode("client_id"), aggregateKey: try last.decode("aggregate_key"),
                target: try last.decode("target"))
        )
    }

    /// The aggregates of `rows` (with `client_id`, `aggregate_key`, `target`).
    static func aggregates(_ rows: [PostgresRow]) throws -> [Aggregate] {
        try rows.map {
            Aggregate(
                clientID: try $0.decode("client_id"), aggregateKey: try $0.decode("aggregate_key"),
                target: try $0.decode("target"))
        }
    }
}

extension OutboxHeads.Aggregate {
    /// The aggregate `message` is sent in.
    init(_ message: OutboxMessage) {
        self.init(clientID: message.clientID, aggregateKey: message.aggregateKey, target: message.target.rawValue)
    }
}
