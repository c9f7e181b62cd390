import Foundation
import JSON
import Postgres
import ReceiptCore

/// The outbox: messages owed to game servers, mail recipients and stores, written in the same
/// database transaction as the change they announce, and claimed by workers with leases.
public struct OutboxRepository: Sendable {
    let pool: PostgresPool
    /// Opens sealed e-mail bodies when they are claimed for sending.
    let secrets: SecretBox

    init(pool: PostgresPool, secrets: SecretBox) {
        self.pool = pool
        self.secrets = secrets
    }

    /// What every webhook carries: a stable event id (the same on every retry), its type, its data.
    struct Envelope<Payload: Encodable>: Encodable {
        let eventID: String
        let type: String
        let data: Payload
        enum CodingKeys: String, CodingKey { case eventID = "event_id", type, data }
    }

    /// A message in our envelope with the event id it carries (the row's, too), not yet written.
    struct Queued: Sendable {
        let eventID: UUID
        let message: OutboxMessage
    }

    /// An event in our envelope, ready for `insert`.
    static func envelope(
        event type: String, payload: some Encodable, client: String, aggregateKey: String,
        target: OutboxTarget = .webhook
    ) throws -> Queued {
        let eventID = UUID.timeOrdered()
        let body = try JSONEncoder.receiptGateStorage.encode(
            Envelope(eventID: eventID.lowercasedText, type: type, data: payload))
        return Queued(
            eventID: eventID,
            message: OutboxMessage(clientID: client, target: target, type: type, aggregateKey: aggregateKey, body: body)
        )
    }

    /// A `{"transaction": …}` event in our envelope, written by `JSONWriter` (the bytes `envelope`
    /// writes, at a fraction of JSONEncoder's cost: every new purchase with a webhook owes one).
    static func envelope(
        event type: String, transaction: NativeTransaction, client: String, aggregateKey: String
    ) -> Queued {
        let eventID = UUID.timeOrdered()
        var writer = JSONWriter(capacity: 1024)
        writer.beginObject()
        writer.key("data")
        writer.beginObject()
        writer.key("transaction")
        transaction.write(to: &writer)
        writer.endObject()
        writer.key("event_id")
        writer.string(eventID.lowercasedText)
        writer.key("type")
        writer.string(type)
        writer.endObject()
        return Queued(
            eventID: eventID,
            message: OutboxMessage(
                clientID: client, target: .webhook, type: type, aggregateKey: aggregateKey, body: writer.data))
    }

    /// Queues an event in our envelope.
    static func enqueue(
        event type: String, payload: some Encodable, client: String, aggregateKey: String,
        target: OutboxTarget = .webhook,
        on connection: PostgresConnection
    ) throws {
        try insert(
            [envelope(event: type, payload: payload, client: client, aggregateKey: aggregateKey, target: target)],
            on: connection)
    }

    /// Writes enveloped messages, due now, unplaced, in one statement (a group commit's whole batch).
    static func insert(_ messages: [Queued], on connection: PostgresConnection) throws {
        guard !messages.isEmpty else { return }
        let ids = messages.map { $0.eventID.lowercasedText }, clients = messages.map(\.message.clientID)
        let types = messages.map(\.message.type), keys = messages.map(\.message.aggregateKey),
            targets = messages.map(\.message.target.rawValue)
        let bodies = messages.map { String(decoding: $0.message.body, as: UTF8.self) }
        try connection.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, payload, target, next_attempt_at)
            SELECT m.event_id, m.client_id, m.event_type, m.aggregate_key, m.payload::jsonb, m.target, now()
            FROM unnest(\(ids)::uuid[], \(clients)::text[], \(types)::text[], \(keys)::text[], \(bodies)::text[], \(targets)::text[])
                WITH ORDINALITY AS m(event_id, client_id, event_type, aggregate_key, payload, target, n)
            ORDER BY m.n  -- ids in the order given: an aggregate's messages are sent in id order
            """)
    }

    /// Queues a message whose body someone else rendered (a refund callback, an e-mail), sent as
    /// is. An e-mail is sealed under the master key (its one-time link must not sit readable in
    /// the database or its backups); `secrets` is required for one.
    static func enqueue(
        _ message: OutboxMessage, sealingMailWith secrets: SecretBox? = nil, notBefore: Date? = nil,
        on connection: PostgresConnection
    ) throws {
        let eventID = UUID.timeOrdered()
        var stored = message
        if message.target == .email {
            guard let secrets else {
                throw ClientStoreError.invalid("an e-mail is queued only sealed, and no master key was given")
            }
            stored.body = try sealedMail(message.body, eventID: eventID, secrets: secrets)
        }
        try insert(eventID: eventID, message: stored, notBefore: notBefore, on: connection)
    }

    /// `{"sealed": base64(AES-GCM)}`, bound to the row's event id so a box copied onto another row does not open.
    static func sealedMail(_ body: Data, eventID: UUID, secrets: SecretBox) throws -> Data {
        let box = try secrets.seal(
            String(decoding: body, as: UTF8.self), owner: mailOwner(eventID.lowercasedText))
        return try JSONEncoder.receiptGateStorage.encode(["sealed": box.base64EncodedString()])
    }

    /// The e-mail as it must be sent; a row from before mail was sealed is returned as it is.
    func openedMail(_ payload: String, eventID: String) throws -> String {
        struct Sealed: Decodable { let sealed: String }
        guard let sealed = try? JSONDecoder().decode(Sealed.self, from: Data(payload.utf8)) else { return payload }
        guard let box = Data(base64Encoded: sealed.sealed) else {
            throw ClientStoreError.invalid("a sealed e-mail is not base64")
        }
        return try secrets.open(box, owner: Self.mailOwner(eventID.lowercased()))
    }

    static func mailOwner(_ eventID: String) -> String { "outbox.email:\(eventID)" }

    /// `notBefore`: the message waits until then (a refund answer waits for the game's report).
    /// Written unplaced: the worker gives it its place in its aggregate (`OutboxHeads`).
    /// Writes enveloped messages like `insert`, those marked in `claiming` *handed*, when nothing
    /// of their aggregate is pending or in flight (a new purchase's first messages): written
    /// delivered, in flight under `lease` seconds (`outbox_handed`, one row for each client's
    /// handed messages of the statement, named by the first of their ids), and returned, to be sent by this process
    /// once the transaction commits (`OutboxHandoff`); a success writes nothing more. Mark at most
    /// one message of an aggregate and target: the rest wait behind it, as later ones do. A marked
    /// message with seconds in `parkedFor` (its receiver is held open) is written its aggregate's
    /// head instead, parked that long, and is not returned.
    static func insert(
        _ messages: [Queued], claiming: [Bool], parkedFor: [Double] = [], lease: Int, on connection: PostgresConnection
    ) throws -> [Claimed] {
        guard !messages.isEmpty else { return [] }
        let ids = messages.map { $0.eventID.lowercasedText }, clients = messages.map(\.message.clientID)
        let types = messages.map(\.message.type), keys = messages.map(\.message.aggregateKey),
            targets = messages.map(\.message.target.rawValue), claims = claiming.map { $0 ? "true" : "false" }
        let parks = messages.indices.map { String(parkedFor.indices.contains($0) ? max(0, parkedFor[$0]) : 0) }
        let bodies = messages.map { String(decoding: $0.message.body, as: UTF8.self) }
        // The pending and in-flight checks read the snapshot before this statement: its own rows
        // are not seen, which is why only one message of an aggregate and target may be marked.
        // Prepared once per connection, as the group commit's statement is: planning it cost more
        // than running it. Its plan is made once for any batch and any backlog, so the fences
        // (`OFFSET 0`) keep it to index lookups a message, evaluated once: unfenced, a plan made
        // while little was pending read every pending entry (the dead ones of delivered messages
        // too) for each batch.
        // A handed message keeps its body as text, in a table of its own (`outbox_bodies`, under
        // the id the statement draws for it, written once and kept as long as its message):
        // parsing it into jsonb cost more than the rest of its row, and its retries send the bytes
        // its first attempt signed. The rest keep jsonb (`payload`), which a process of the
        // version before can still claim and read.
        let rows = try connection.query(
            """
            WITH m AS MATERIALIZED (
                SELECT nextval('outbox_id_seq') AS id, m.event_id, m.client_id, m.event_type, m.aggregate_key, m.body, m.target, m.park,
                       f.claimed, f.handed
                FROM unnest(\(ids)::uuid[], \(clients)::text[], \(types)::text[], \(keys)::text[], \(bodies)::text[], \(targets)::text[], \(claims)::boolean[], \(parks)::float8[])
                    WITH ORDINALITY AS m(event_id, client_id, event_type, aggregate_key, body, target, claim, park, n)
                CROSS JOIN LATERAL (
                    SELECT m.claim AND NOT EXISTS (
                        SELECT 1 FROM outbox p
                        WHERE p.client_id = m.client_id AND p.aggregate_key = m.aggregate_key AND p.target = m.target AND p.status = 'pending'
                        OFFSET 0
                    ) AND NOT \(unescaped: Self.inFlightInAggregate(of: "m")) AS claimed OFFSET 0) f0
                CROSS JOIN LATERAL (SELECT f0.claimed, f0.claimed AND m.park = 0 AS handed) f
                ORDER BY m.n  -- ids in the order given: an aggregate's messages are sent in id order
            ), batch AS MATERIALIZED (
                -- One a client: one client's slow receiver keeps no other client's messages in flight.
                SELECT client_id, min(id) AS first_id, max(id) AS last_id FROM m WHERE handed GROUP BY client_id
            ), in_flight AS (
                INSERT INTO outbox_handed (first_id, last_id, lease_until)
                SELECT first_id, last_id, now() + make_interval(secs => \(lease)) FROM batch
            ), bodies AS (
                INSERT INTO outbox_bodies (id, body) SELECT id, body FROM m WHERE handed
            )
            INSERT INTO outbox (id, event_id, client_id, event_type, aggregate_key, payload, target, next_attempt_at, placed, is_head, lease_until,
                                status, delivered_at, attempts, handed_in)
            SELECT m.id, m.event_id, m.client_id, m.event_type, m.aggregate_key, CASE WHEN NOT m.handed THEN m.body::jsonb END, m.target,
                   CASE WHEN m.claimed AND NOT m.handed THEN now() + make_interval(secs => m.park) ELSE now() END, m.claimed,
                   m.claimed AND NOT m.handed, CASE WHEN m.handed THEN now() + make_interval(secs => \(lease)) END,
                   CASE WHEN m.handed THEN 'delivered' ELSE 'pending' END, CASE WHEN m.handed THEN now() END, CASE WHEN m.handed THEN 1 ELSE 0 END,
                   CASE WHEN m.handed THEN (SELECT b.first_id FROM batch b WHERE b.client_id = m.client_id) END
            FROM m ORDER BY m.id
            RETURNING id, event_id::text AS event_id, created_at, lease_until::text AS lease, handed_in
            """, preparedAs: "receiptgate_outbox_insert_handed")
        let byEventID = Dictionary(
            messages.map { ($0.eventID.lowercasedText, $0) }, uniquingKeysWith: { a, _ in a })
        return try rows.compactMap { row -> Claimed? in
            guard let lease = try row.decode("lease", as: String?.self),
                let handedIn = try row.decode("handed_in", as: Int64?.self)
            else { return nil }
            // A handed message not returned would be counted settled with its batch unsent.
            guard let queued = byEventID[try row.decode("event_id", as: String.self)] else {
                throw PostgresError(.queryFailed, "a handed outbox message came back under an event id not written")
            }
            let message = queued.message
            return Claimed(
                id: try row.decode("id"), eventID: queued.eventID.lowercasedText, clientID: message.clientID,
                aggregateKey: message.aggregateKey, type: message.type,
                payload: String(decoding: message.body, as: UTF8.self), attempts: 0,
                createdAt: try row.decode("created_at"), target: message.target, lease: lease, handedIn: handedIn)
        }
    }

    private static func insert(
        eventID: UUID, message: OutboxMessage, notBefore: Date? = nil, on connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, payload, target, next_attempt_at)
            VALUES (\(eventID), \(message.clientID), \(message.type), \(message.aggregateKey), \(String(decoding: message.body, as: UTF8.self))::jsonb,
                    \(message.target.rawValue), COALESCE(\(notBefore)::timestamptz, now()))
            """)
    }

    struct Claimed: Sendable {
        let id: Int64, eventID: String, clientID: String, aggregateKey: String, type: String, payload: String,
            attempts: Int, createdAt: Date
        let target: OutboxTarget
        /// The claim's lease end, as Postgres wrote it: what this claim writes back applies only
        /// while the message is still under this lease (not taken over by another sender since).
        let lease: String
        var aggregate: OutboxHeads.Aggregate {
            OutboxHeads.Aggregate(clientID: clientID, aggregateKey: aggregateKey, target: target.rawValue)
        }
        /// Why a sealed e-mail did not open (then `payload` is empty and nothing may be sent).
        var unopened: String?
        /// The handed batch it was written delivered in (`insert`): a success writes nothing, and
        /// what settles it otherwise puts it back in the pending state. Nil for a claimed message.
        var handedIn: Int64?
    }

    /// A transaction of the worker's own bookkeeping (placing, leases, outcomes) that does not wait
    /// for its commit to reach the disk: delivery is at least once, so what a crash might take back
    /// (a lease, a delivered mark) only means a message is sent again, and the worker's commits
    /// stop queueing behind every verification's.
    ///
    /// Its statements find rows by id, key or queue index, never by reading the table whole, and
    /// say so to the planner: a statement prepared once per connection keeps the plan made when it
    /// was first run (until an analyze of the table), and the delivered mark's, made while a fresh
    /// outbox was still small, chose to scan it, and went on scanning it as it grew, for every
    /// delivery marked. (The statements also prepared outside it, the aggregate lock and reseat,
    /// are fenced to index lookups whatever their plan.)
    private func bookkeeping<T: Sendable>(
        durable: Bool = false, _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await pool.withTransaction { connection in
            try connection.execute(durable ? Self.durableBookkeepingSettings : Self.bookkeepingSettings)
            return try body(connection)
        }
    }

    /// `bookkeepingSettings` for a transaction whose loss in a crash nothing would repair: a
    /// receiver's messages parked or released (rare, one a change of its circuit) wait for their commit.
    static let durableBookkeepingSettings: PostgresQuery = "SELECT set_config('enable_seqscan', 'off', true)"

    /// What `bookkeeping` sets for its transaction, in one statement.
    static let bookkeepingSettings: PostgresQuery =
        "SELECT set_config('synchronous_commit', 'off', true), set_config('enable_seqscan', 'off', true)"

    /// Places the messages written since the last call (`OutboxHeads.place`); how many aggregates.
    @discardableResult
    func placeNew(limit: Int = 500) async throws -> Int {
        try await bookkeeping { try OutboxHeads.place(limit: limit, on: $0) }
    }

    /// Reseats aggregates left without a head among a page of pending messages after `after`
    /// (`OutboxHeads.heal`): how many, and where the next page starts (nil: from the beginning).
    func healHeads(
        after: OutboxHeads.Position?, pageSize: Int = 5_000
    ) async throws -> (healed: Int, next: OutboxHeads.Position?) {
        try await pool.withTransaction { try OutboxHeads.heal(after: after, pageSize: pageSize, on: $0) }
    }

    /// Claims due heads for `targets` (only an aggregate's oldest pending message is sent, so order
    /// holds), client by client, in turns: every client's longest due first, then every client's
    /// second, and so on, so one client's backlog never crowds out another's messages; none of the
    /// `busy` clients'. Each with a lease so no other worker sends it meanwhile (its next attempt
    /// moves to the lease's end, when it is due again if its sender never says how it went). The
    /// clients with pending heads are found by skipping through their index, one probe each, so a
    /// claim costs the same whatever waits behind the heads.
    func claim(targets: [OutboxTarget], limit: Int, lease: Int, busy: [String] = []) async throws -> [Claimed] {
        let query: PostgresQuery = """
            WITH RECURSIVE clients AS (
                (SELECT client_id FROM outbox WHERE status = 'pending' AND is_head ORDER BY client_id LIMIT 1)
                UNION ALL
                SELECT (SELECT o.client_id FROM outbox o WHERE o.status = 'pending' AND o.is_head AND o.client_id > c.client_id
                        ORDER BY o.client_id LIMIT 1)
                FROM clients c WHERE c.client_id IS NOT NULL
            ), picked AS (
                SELECT due.id FROM clients c
                CROSS JOIN LATERAL (
                    SELECT o.id, o.next_attempt_at, row_number() OVER (ORDER BY o.next_attempt_at, o.id) AS turn FROM (
                        SELECT o.id, o.next_attempt_at FROM outbox o
                        WHERE o.client_id = c.client_id AND o.status = 'pending' AND o.is_head AND o.next_attempt_at <= now()
                          AND o.target = ANY (\(targets.map(\.rawValue))::text[])
                        ORDER BY o.next_attempt_at LIMIT \(limit)
                        FOR UPDATE SKIP LOCKED) o) due
                WHERE c.client_id IS NOT NULL AND c.client_id <> ALL (\(busy)::text[])
                ORDER BY due.turn, due.next_attempt_at, due.id LIMIT \(limit)
            )
            UPDATE outbox o SET lease_until = now() + make_interval(secs => \(lease)), next_attempt_at = now() + make_interval(secs => \(lease))
            FROM picked WHERE o.id = picked.id
            RETURNING o.id, o.event_id, o.client_id, o.aggregate_key, o.event_type, \(unescaped: Self.bodyColumn) AS payload, o.attempts, o.created_at, o.target,
                      o.lease_until::text AS lease
            """
        // New messages placed first, in the same transaction: what was written just now is claimable now.
        let rows = try await bookkeeping { connection in
            _ = try OutboxHeads.place(limit: 500, on: connection)
            return try connection.query(query)
        }
        return try rows.map { row in
            let target = try TransactionRows.typed(row, "target", as: OutboxTarget.self)
            let eventID: String = try row.decode("event_id"), stored: String? = try row.decode("payload")
            // Opened only here, just before sending; a box that does not open, or a body not found,
            // is sent as nothing: the worker records why on the row and retries it.
            var payload = stored ?? "", unopened: String? = stored == nil ? "the message's body was not found" : nil
            if target == .email, let stored {
                do { payload = try openedMail(stored, eventID: eventID) } catch {
                    payload = ""
                    unopened = "the sealed e-mail did not open: \(error)"
                }
            }
            return Claimed(
                id: try row.decode("id"), eventID: eventID, clientID: try row.decode("client_id"),
                aggregateKey: try row.decode("aggregate_key"),
                type: try row.decode("event_type"), payload: payload, attempts: try row.decode("attempts"),
                createdAt: try row.decode("created_at"), target: target, lease: try row.decode("lease"),
                unopened: unopened)
        }
    }

    /// What a claimed message not sent after all is set to: pending. A claimed one is already,
    /// and keeps its place; a handed one (written delivered, in flight) becomes its aggregate's
    /// head, placed: it was written only when nothing of its aggregate was pending or in flight,
    /// and whatever of it was written since waits unplaced behind it (`OutboxHeads.reseat`), to
    /// be placed in id order once it is pending. It no longer names its batch, so nothing takes
    /// it for in flight again. Its columns unqualified (`status` the value before the update).
    static let backToPending = """
        status = 'pending', is_head = (is_head OR status = 'delivered'), placed = (placed OR status = 'delivered'),
        delivered_at = NULL, handed_in = NULL
        """

    /// The attempts of a claimed message not sent after all, as they were: a handed one was
    /// written with the attempt it was handed for, which was not made.
    static let attemptsNotMade = "CASE WHEN status = 'delivered' THEN 0 ELSE attempts END"

    /// Whether the claimed message is still this claim's: pending or in flight, under the lease it
    /// was claimed or handed with. A sender whose lease ran out (another took the message over)
    /// changes nothing.
    private static func stillClaimed(_ event: Claimed) -> PostgresQuery {
        // The lease implies its sender has not settled it (every outcome recorded clears it; a
        // handed message's success records nothing, and nothing comes after it). `status =
        // 'pending'` here would let Postgres choose a pending-only index over the id's.
        "id = \(event.id) AND lease_until = \(event.lease)::timestamptz"
    }

    /// Sent: the next message of its aggregate becomes the head.
    func markDelivered(_ event: Claimed) async throws { try await markDelivered([event]) }

    /// Several sent, recorded in one transaction (one commit for all: the worker gathers them).
    /// Each only while still under the lease it was claimed with.
    func markDelivered(_ events: [Claimed]) async throws {
        guard !events.isEmpty else { return }
        try await bookkeeping { try Self.markDelivered(events, on: $0) }
    }

    /// `markDelivered`, in the caller's transaction (one of `bookkeeping`'s).
    static func markDelivered(_ events: [Claimed], on connection: PostgresConnection) throws {
        let ids: [String] = events.map { String($0.id) }, leases: [String] = events.map(\.lease)
        let update: PostgresQuery = """
            UPDATE outbox o SET status = 'delivered', delivered_at = now(), attempts = o.attempts + 1, lease_until = NULL, last_error = NULL,
                is_head = false
            FROM unnest(\(ids)::bigint[], \(leases)::timestamptz[]) AS sent(id, lease)
            WHERE o.id = sent.id AND o.lease_until = sent.lease
            """
        try OutboxHeads.moving(events.map(\.aggregate), on: connection) {
            _ = try connection.query(update, preparedAs: "receiptgate_outbox_delivered")
        }
    }

    /// Failed: tried again in `retryInSeconds`, still its aggregate's head (a handed message, in
    /// flight until now, becomes it: `Self.backToPending`); or, `dead`, given up and the next
    /// message of its aggregate the head.
    func markFailed(_ event: Claimed, attempts: Int, error: String, dead: Bool, retryInSeconds: Double) async throws {
        guard dead else {
            let update: PostgresQuery = """
                UPDATE outbox SET attempts = \(attempts), last_error = \(String(error.prefix(500))), lease_until = NULL,
                    next_attempt_at = now() + make_interval(secs => \(retryInSeconds)), \(unescaped: Self.backToPending)
                WHERE \(Self.stillClaimed(event))
                """
            _ = try await bookkeeping { try $0.execute(update) }
            return
        }
        try await bookkeeping { connection in
            try OutboxHeads.moving([event.aggregate], on: connection) {
                try connection.execute(
                    """
                    UPDATE outbox SET attempts = \(attempts), last_error = \(String(error.prefix(500))), lease_until = NULL, status = 'dead', is_head = false,
                        delivered_at = NULL, handed_in = NULL
                    WHERE \(Self.stillClaimed(event))
                    """)
            }
        }
    }

    /// Messages claimed or handed but not sent now (their receiver's circuit is open): due again
    /// in `seconds`, pending, their attempts unchanged (a handed one's as never attempted). Each
    /// only while still under the lease it was claimed or handed with.
    func park(_ events: [Claimed], until seconds: Double) async throws {
        guard !events.isEmpty else { return }
        let ids: [String] = events.map { String($0.id) }, leases: [String] = events.map(\.lease)
        let statement: PostgresQuery = """
            UPDATE outbox o SET lease_until = NULL, next_attempt_at = now() + make_interval(secs => \(seconds)), \(unescaped: Self.backToPending),
                attempts = \(unescaped: Self.attemptsNotMade)
            FROM unnest(\(ids)::bigint[], \(leases)::timestamptz[]) AS held(id, lease)
            WHERE o.id = held.id AND o.lease_until = held.lease
            """
        _ = try await bookkeeping { try $0.execute(statement) }
    }

    /// Claimed or handed messages not sent after all: pending and due now, for any worker, their
    /// attempts unchanged (a handed one's as never attempted).
    func release(_ events: [Claimed]) async throws {
        guard !events.isEmpty else { return }
        _ = try await bookkeeping { try Self.release(events, on: $0) }
    }

    /// `release`, on `connection` (in its transaction, or committed on its own).
    static func release(_ events: [Claimed], on connection: PostgresConnection) throws {
        let ids: [String] = events.map { String($0.id) }, leases: [String] = events.map(\.lease)
        let statement: PostgresQuery = """
            UPDATE outbox o SET lease_until = NULL, next_attempt_at = now(), \(unescaped: Self.backToPending),
                attempts = \(unescaped: Self.attemptsNotMade)
            FROM unnest(\(ids)::bigint[], \(leases)::timestamptz[]) AS held(id, lease)
            WHERE o.id = held.id AND o.lease_until = held.lease
            """
        try connection.execute(statement)
    }

    /// Settled by their sender (`OutboxHandoff.settled`): every message of these handed batches
    /// was delivered, or put back in the pending state. Their rows go, and with them the last
    /// sign that their delivered messages were in flight.
    func vouch(forBatches firstIDs: [Int64]) async throws {
        guard !firstIDs.isEmpty else { return }
        let ids = firstIDs.map(String.init)
        _ = try await bookkeeping {
            try $0.execute("DELETE FROM outbox_handed WHERE first_id = ANY (\(ids)::bigint[])")
        }
    }

    /// Handed batches whose lease ran out, their sender stopped without settling them: what they
    /// hold still in flight goes back to the pending state, unplaced (placed in id order with what
    /// waited behind it), and is sent again, at least once. Up to `limit` batches; another worker
    /// skips those one is taking. How many messages.
    @discardableResult
    func recoverHanded(limit: Int = 100) async throws -> Int {
        let statement: PostgresQuery = """
            WITH expired AS (
                DELETE FROM outbox_handed WHERE first_id IN (
                    SELECT first_id FROM outbox_handed WHERE lease_until < now() ORDER BY first_id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
                RETURNING first_id, last_id)
            UPDATE outbox o SET status = 'pending', placed = false, is_head = false, delivered_at = NULL, lease_until = NULL, attempts = 0,
                next_attempt_at = now(), handed_in = NULL
            FROM expired e WHERE o.id BETWEEN e.first_id AND e.last_id AND o.handed_in = e.first_id AND o.status = 'delivered'
            """
        return try await bookkeeping(durable: true) { try $0.execute(statement) }
    }

    /// Every head of `clientID`'s `target` due before `seconds` from now waits that long (a
    /// receiver that keeps failing is not tried again meanwhile, but for a probe).
    func parkReceiver(clientID: String, target: OutboxTarget, seconds: Double) async throws -> Int {
        let statement: PostgresQuery = """
            UPDATE outbox SET next_attempt_at = now() + make_interval(secs => \(seconds))
            WHERE client_id = \(clientID) AND target = \(target.rawValue) AND status = 'pending' AND is_head
              AND next_attempt_at < now() + make_interval(secs => \(seconds)) AND (lease_until IS NULL OR lease_until < now())
            """
        return try await bookkeeping(durable: true) { try $0.execute(statement) }
    }

    /// The oldest head of `clientID`'s `target` is due now: the probe of its open receiver.
    func probe(clientID: String, target: String) async throws -> Int {
        let statement: PostgresQuery = """
            UPDATE outbox SET next_attempt_at = now()
            WHERE id = (SELECT id FROM outbox WHERE client_id = \(clientID) AND target = \(target) AND status = 'pending' AND is_head
                        AND next_attempt_at > now() AND (lease_until IS NULL OR lease_until < now()) ORDER BY id LIMIT 1)
            """
        return try await bookkeeping { try $0.execute(statement) }
    }

    /// Every head of `clientID`'s `target` waiting (after a failure, or parked) is due now: its
    /// receiver answered again. Heads under a lease are left to their senders.
    func releaseReceiver(clientID: String, target: OutboxTarget) async throws -> Int {
        let statement: PostgresQuery = """
            UPDATE outbox SET next_attempt_at = now()
            WHERE client_id = \(clientID) AND target = \(target.rawValue) AND status = 'pending' AND is_head AND next_attempt_at > now()
              AND (lease_until IS NULL OR lease_until < now())
            """
        return try await bookkeeping(durable: true) { try $0.execute(statement) }
    }

    /// An outbox message as an operator sees it.
    public struct Event: Encodable, Sendable {
        let eventID: String, clientID: String, type: String, target: String, status: String, attempts: Int
        let nextAttemptAt: Date?, lastError: String?, createdAt: Date, deliveredAt: Date?

        /// `failedCondition`, for a message already read.
        var hasFailed: Bool { status == "dead" || (status == "pending" && attempts > 0) }

        enum CodingKeys: String, CodingKey {
            case eventID = "event_id", clientID = "client_id", type, target, status, attempts, nextAttemptAt =
                "next_attempt_at"
            case lastError = "last_error", createdAt = "created_at", deliveredAt = "delivered_at"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(eventID, forKey: .eventID)
            try container.encode(clientID, forKey: .clientID)
            try container.encode(type, forKey: .type)
            try container.encode(target, forKey: .target)
            try container.encode(status, forKey: .status)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(
                status == "pending" ? nextAttemptAt.map(Timestamps.iso8601) : nil, forKey: .nextAttemptAt)
            try container.encode(lastError, forKey: .lastError)
            try container.encode(Timestamps.iso8601(createdAt), forKey: .createdAt)
            try container.encode(deliveredAt.map(Timestamps.iso8601), forKey: .deliveredAt)
        }
    }

    /// Newest first. `failedOnly`: dead events and pending ones that have failed at least once.
    public func list(failedOnly: Bool, limit: Int = 100) async throws -> [Event] {
        try await pool.query(
            """
            SELECT \(unescaped: Self.eventColumns) FROM outbox
            WHERE NOT \(failedOnly) OR \(unescaped: Self.failedCondition)
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map(Self.event)
    }

    /// A message that failed: given up (dead), or waiting to be tried again after a failure.
    static let failedCondition = "(status = 'dead' OR (status = 'pending' AND attempts > 0))"

    /// Of a row of `outbox` (its columns unqualified): a handed message still in flight, written
    /// delivered but not yet settled by its sender. Shown, counted and treated as pending.
    package static let inFlight =
        "(status = 'delivered' AND handed_in IS NOT NULL AND EXISTS (SELECT 1 FROM outbox_handed h WHERE h.first_id = handed_in))"

    /// Whether a message of the aggregate (client, key and target) of the row `alias` is in
    /// flight: one index lookup, fenced so any plan keeps it one.
    static func inFlightInAggregate(of alias: String) -> String {
        """
        EXISTS (SELECT 1 FROM outbox h JOIN outbox_handed b ON b.first_id = h.handed_in
                WHERE h.aggregate_key = \(alias).aggregate_key AND h.client_id = \(alias).client_id AND h.target = \(alias).target
                  AND h.status = 'delivered' OFFSET 0)
        """
    }

    /// The messages in flight, as `o`, found through their batches (a handful of rows) rather
    /// than by reading the outbox: a `FROM` clause.
    static let inFlightRows =
        "outbox_handed b JOIN outbox o ON o.id BETWEEN b.first_id AND b.last_id AND o.handed_in = b.first_id AND o.status = 'delivered'"

    /// A message's body as it is sent, of the row `o`: the text written, in `outbox_bodies` or
    /// (before bodies were kept apart) in the row, or (a message not handed)
    /// its jsonb. Looked up row by row: a join could be planned as a scan of every body kept.
    static let bodyColumn = "COALESCE((SELECT b.body FROM outbox_bodies b WHERE b.id = o.id), o.body, o.payload::text)"

    static let eventColumns = """
        event_id::text AS event_id, client_id, event_type, target, CASE WHEN \(inFlight) THEN 'pending' ELSE status END AS status,
        CASE WHEN \(inFlight) THEN 0 ELSE attempts END AS attempts, next_attempt_at, last_error, created_at, CASE WHEN \(inFlight) THEN NULL ELSE delivered_at END AS delivered_at
        """

    static func event(_ row: PostgresRow) throws -> Event {
        Event(
            eventID: try row.decode("event_id"), clientID: try row.decode("client_id"),
            type: try row.decode("event_type"),
            target: try row.decode("target"), status: try row.decode("status"), attempts: try row.decode("attempts"),
            nextAttemptAt: try row.decode("next_attempt_at"), lastError: try row.decode("last_error"),
            createdAt: try row.decode("created_at"), deliveredAt: try row.decode("delivered_at"))
    }

    /// Queues the event for another delivery now (dead, pending or even delivered). False if unknown.
    /// It goes before its aggregate's later pending messages, as it did the first time. A message
    /// being sent right now (claimed, or handed and in flight) is left to its sender.
    public func redeliver(eventID: String) async throws -> Bool {
        guard let id = UUID(uuidString: eventID) else { return false }
        return try await pool.withTransaction { connection in
            guard
                let row = try connection.query(
                    "SELECT client_id, aggregate_key, target FROM outbox WHERE event_id = \(id)"
                ).first
            else { return false }
            try OutboxHeads.moving(try OutboxHeads.aggregates([row]), on: connection) {
                try connection.execute(
                    """
                    UPDATE outbox SET status = 'pending', next_attempt_at = now(), lease_until = NULL, handed_in = NULL,
                        attempts = CASE WHEN \(unescaped: Self.inFlight) THEN 0 ELSE attempts END,
                        delivered_at = CASE WHEN \(unescaped: Self.inFlight) THEN NULL ELSE delivered_at END
                    WHERE event_id = \(id) AND (lease_until IS NULL OR lease_until < now() OR (status = 'delivered' AND NOT \(unescaped: Self.inFlight)))
                    """)
            }
            return true
        }
    }
}

extension JSONEncoder {
    static var receiptGateStorage: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

/// Time formats the APIs show, made once (formatters are costly to create).
enum Timestamps {
    /// ISO 8601 with milliseconds, UTC (`UTCTimestamp`: no formatter, no lock).
    static func iso8601(_ date: Date) -> String { UTCTimestamp.milliseconds(date) }

}
