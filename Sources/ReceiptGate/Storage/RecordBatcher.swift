import Foundation
import JSON
import Postgres
import ReceiptCore
import Synchronization

/// Group commit for plain verifications (no subscription, acknowledgement, entitlement or dialect
/// effects): the verifications waiting at one moment are recorded by one statement, in one
/// transaction, with one commit — the transaction rows (`ON CONFLICT DO NOTHING`, so the unique
/// key still decides duplicates) and the attempt rows together, each client's version checked in
/// the same statement, then the webhook and delivery messages the new purchases owe in a second. A lone request is sent at once: batches form only from what
/// queues while earlier ones are in flight. `synchronous_commit` is untouched, so every answer
/// still waits for its commit to be durable.
///
/// Purchases already on record are settled by a second statement (`settleSeenBefore`). Anything
/// neither can settle is handed back for the ordinary path: a client changed since it was cached
/// (`stale`), a purchase being recorded by a transaction still in flight (`contended`), or a batch
/// the server refused as a whole.
final class RecordBatcher: Sendable {
    enum Result: Sendable {
        case recorded(VerificationOutcome)
        /// The client row is no longer the version it was authenticated with (or is disabled).
        case stale
        /// Already recorded for a client that may not see it (another game).
        case foreign
        /// Not settled here (recorded by a transaction still in flight, or a batch refused); record it the ordinary way.
        case contended
    }

    struct Item {
        let key: String
        /// The client's catalog scope, held shared by the batch's transaction.
        var scope: String { ClientInfo.scope(clientID: client.clientID, gameID: client.gameID) }
        let proven: ProvenPurchase
        /// Decided once: what the row is written with is what the answer says.
        let state: TransactionState
        let client: Client
        let version: Int64
        let continuation: CheckedContinuation<Result, any Error>
    }

    let pool: PostgresPool
    /// Batches in flight at once (each holds one pool connection while it runs). One: what
    /// arrives while a batch commits waits for that commit (a few milliseconds) and then shares
    /// the next, so Postgres pays each statement's fixed cost over more verifications; two
    /// halved the batches and cost Postgres 15-25 % more per verification, with a worse tail.
    let maxInFlight: Int
    let maxBatch: Int
    /// This process's outbox worker, when it runs one: a new purchase's messages are written
    /// handed (delivered, in flight) and passed to it once the batch commits.
    let handoff: OutboxHandoff?
    /// The service's clock: what state the evidence shows.
    let now: @Sendable () -> Date
    private struct Waiting {
        var queue: [Item] = []
        var inFlight = 0
        var counts = Counts()
    }

    private let waiting = Mutex(Waiting())

    /// What the batch statements decided, for `/metrics`; tests read it to know that the
    /// group-commit path is the one they cover.
    struct Counts: Sendable, Equatable {
        /// Answered by the batch (recorded now, seen before, or another game's), not handed back to the ordinary path.
        var settled = 0
        /// Found with a client changed since the request was authenticated (its version checked in the statement).
        var stale = 0
    }

    var served: Counts { waiting.withLock { $0.counts } }

    init(
        pool: PostgresPool, maxInFlight: Int = 1, maxBatch: Int = 64, handoff: OutboxHandoff? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.pool = pool
        self.now = now
        self.handoff = handoff
        self.maxInFlight = maxInFlight
        self.maxBatch = maxBatch
    }

    func record(_ proven: ProvenPurchase, client: Client, version: Int64) async throws -> Result {
        let purchase = proven.purchase
        let key = "\(purchase.store.rawValue)\u{0}\(purchase.environment.rawValue)\u{0}\(purchase.transactionID)"
        let result: Result = try await withCheckedThrowingContinuation { continuation in
            let item = Item(
                key: key, proven: proven, state: LedgerRules.state(of: purchase, at: now()), client: client,
                version: version,
                continuation: continuation)
            let start = waiting.withLock { waiting -> Bool in
                waiting.queue.append(item)
                guard waiting.inFlight < maxInFlight else { return false }
                waiting.inFlight += 1
                return true
            }
            if start { launch() }
        }
        switch result {
        case .recorded, .foreign: waiting.withLock { $0.counts.settled += 1 }
        case .stale: waiting.withLock { $0.counts.stale += 1 }
        case .contended: break
        }
        return result
    }

    /// One pool job that keeps taking batches until the queue is empty, so a busy service does
    /// not hop threads between batches. A connection that fails is given up: a new job, on a
    /// connection the pool has checked, takes over this one's place and what still waits.
    private func launch() {
        let accepted = pool.submit { [self] connection in
            while let batch = nextBatch() {
                switch connection {
                case .success(let connection):
                    guard run(batch, on: connection) else { return launch() }
                case .failure(let error):
                    batch.forEach { $0.continuation.resume(throwing: error) }
                }
            }
        }
        if !accepted {
            let stranded = waiting.withLock { waiting -> [Item] in
                defer { waiting.queue.removeAll(); waiting.inFlight = 0 }
                return waiting.queue
            }
            stranded.forEach {
                $0.continuation.resume(throwing: PostgresError(.poolClosed, "the database pool is shut down"))
            }
        }
    }

    /// Up to `maxBatch` waiting items with distinct keys (a second request for the same purchase
    /// waits for the next batch, where it is a purchase seen before); nil, and one fewer in flight,
    /// when nothing waits.
    private func nextBatch() -> [Item]? {
        waiting.withLock { waiting in
            guard !waiting.queue.isEmpty else {
                waiting.inFlight -= 1
                return nil
            }
            var batch: [Item] = [], keys = Set<String>(), rest: [Item] = []
            for item in waiting.queue {
                if batch.count < maxBatch, keys.insert(item.key).inserted {
                    batch.append(item)
                } else {
                    rest.append(item)
                }
            }
            waiting.queue = rest
            return batch
        }
    }

    /// False when the connection failed (and must not take the next batch).
    private func run(_ batch: [Item], on connection: PostgresConnection) -> Bool {
        var batch = batch
        let settled: [(item: Item, result: Swift.Result<Result, any Error>)]
        var reserved = 0
        // Leases written in this transaction count from its start (`now()`): so does their wait.
        let written = ContinuousClock.now
        // Receivers this transaction writes messages parked for (they were open when it looked).
        var parkedFor: Set<ReceiverCircuits.Receiver> = []
        // Lost after the commit (giving back what a stopped worker refused): no further batch on it.
        var connectionLost = false
        do {
            // One transaction holding each claim's catalog scope shared (`CatalogScopeLock`), taken
            // before the statement that checks the clients' versions, so that statement sees any
            // change committed before. A scope a change holds or waits for is not waited for here:
            // its claims go the ordinary way, and the batch (every tenant's claims) goes on.
            try connection.execute("BEGIN")
            let held = try CatalogScopeLock.tryShare(batch.map(\.scope), on: connection)
            for item in batch where !held.contains(item.scope) { item.continuation.resume(returning: .contended) }
            batch = batch.filter { held.contains($0.scope) }
            // Prepared once per connection: parsing and planning this statement cost Postgres more
            // than running it. The plan does not depend on the batch (one jsonb parameter) and reads
            // rows only by unique key; Postgres replans it when the tables' statistics change.
            let rows = batch.isEmpty ? [] : try connection.query(Self.statement(batch), preparedAs: Self.preparedName)
            let byOrdinal = Self.byOrdinal(rows)
            settled = batch.enumerated().map { ordinal, item in
                (item, Swift.Result { try Self.result(byOrdinal[ordinal], item: item) })
            }
            // What the new purchases owe their game servers commits with them, in one statement.
            let messages = try Self.announcements(settled)
            if let handoff {
                // A client whose receiver holds three quarters of the room already (one that hangs)
                // has its new messages written the ordinary way: the rest is left to the others. A
                // first message for a receiver held open is written parked, as its aggregate's head.
                let crowded = handoff.crowdedClients(), open = handoff.openReceivers()
                let firsts = Self.claimable(messages)
                let parks = zip(firsts, messages).map { first, queued -> Double in
                    let message = queued.message
                    guard first else { return 0 }
                    return open[.init(clientID: message.clientID, target: message.target.rawValue)] ?? 0
                }
                var claiming = messages.indices.map {
                    firsts[$0] && parks[$0] == 0 && !crowded.contains(messages[$0].message.clientID)
                }
                reserved = handoff.reserve(claiming.count { $0 })
                var room = reserved
                claiming = claiming.map { wanted in
                    guard wanted, room > 0 else { return false }
                    room -= 1
                    return true
                }
                // Each aggregate written handed or parked is held (never waited for) until the commit, so no
                // other writer can make a second head meanwhile; one held elsewhere goes the ordinary way.
                let heads = zip(claiming, parks).map { $0 || $1 > 0 }
                let wanted = zip(messages, heads).filter(\.1).map { OutboxHeads.Aggregate($0.0.message) }
                let held = try OutboxHeads.tryLock(wanted, on: connection)
                let claims = zip(messages, heads).map { $1 && held.contains(OutboxHeads.Aggregate($0.message)) }
                parkedFor = Set(
                    messages.indices.filter { parks[$0] > 0 && claims[$0] }.map {
                        let message = messages[$0].message
                        return ReceiverCircuits.Receiver(clientID: message.clientID, target: message.target.rawValue)
                    })
                let claimed = try OutboxRepository.insert(
                    messages, claiming: claims, parkedFor: parks, lease: handoff.leaseSeconds, on: connection)
                try connection.execute("COMMIT")
                handoff.wroteParked(for: parkedFor)
                let refused = handoff.hand(claimed, reserved: reserved, written: written)
                reserved = 0
                // The worker stopped after this batch reserved its room: due now for any worker
                // (if this fails too, their lease runs out and any worker takes them back).
                if !refused.isEmpty {
                    do { try OutboxRepository.release(refused, on: connection) } catch let error as PostgresError
                        where error.code == .connectionFailed
                    {
                        connectionLost = true
                    } catch {}
                }
            } else {
                try OutboxRepository.insert(messages, on: connection)
                try connection.execute("COMMIT")
            }
        } catch let error as PostgresError where error.code == .connectionFailed {
            handoff?.hand([], reserved: reserved)
            handoff?.wroteParked(for: parkedFor)
            // The connection failed: whether it committed is unknown, so say so rather than retry.
            batch.forEach { $0.continuation.resume(throwing: error) }
            return false
        } catch {
            handoff?.hand([], reserved: reserved)
            let rolledBack = (try? connection.execute("ROLLBACK")) != nil
            // Refused as a whole (one bad value fails them all, a row that did not decode, a
            // message that did not render): nothing was committed, and each goes the ordinary way
            // alone. A connection that cannot even roll back takes no further batch.
            batch.forEach { $0.continuation.resume(returning: .contended) }
            return rolledBack
        }
        var seenBefore: [(ordinal: Int, item: Item)] = []
        for (ordinal, (item, result)) in settled.enumerated() {
            if case .success(.contended) = result {
                seenBefore.append((ordinal, item))
            } else {
                item.continuation.resume(with: result)
            }
        }
        guard !connectionLost else {
            seenBefore.forEach { $0.item.continuation.resume(returning: .contended) }
            return false
        }
        return seenBefore.isEmpty || settleSeenBefore(seenBefore, on: connection)
    }

    /// The webhook and delivery messages of the purchases the batch recorded (their first claims).
    /// A row that did not decode throws: its purchase would commit without them, and a retry,
    /// then a duplicate, would never owe them again; the batch is rolled back instead.
    private static func announcements(
        _ settled: [(item: Item, result: Swift.Result<Result, any Error>)]
    ) throws -> [OutboxRepository.Queued] {
        try settled.flatMap { item, result -> [OutboxRepository.Queued] in
            guard case .recorded(let outcome) = try result.get() else { return [] }
            return try TransactionRepository.firstClaimMessages(
                outcome.transaction, proven: item.proven, client: item.client)
        }
    }

    /// Which messages may be handed: the first of each aggregate and target in the batch (the
    /// insert hands it only when nothing of its aggregate is pending or in flight, and cannot see
    /// the batch's own rows).
    static func claimable(_ messages: [OutboxRepository.Queued]) -> [Bool] {
        var seen = Set<String>()
        return messages.map { queued in
            let message = queued.message
            return seen.insert("\(message.clientID)\u{0}\(message.aggregateKey)\u{0}\(message.target.rawValue)")
                .inserted
        }
    }

    static let preparedName = "receiptgate_record_batch"

    /// The statement's rows by the `batch_ord` each carries.
    static func byOrdinal(_ rows: [PostgresRow]) -> [Int: PostgresRow] {
        var byOrdinal: [Int: PostgresRow] = [:]
        for row in rows { if let ordinal = try? row.decode("batch_ord", as: Int.self) { byOrdinal[ordinal] = row } }
        return byOrdinal
    }

    private static func result(_ row: PostgresRow?, item: Item) throws -> Result {
        guard let row else { return .contended }
        switch try row.decode("batch_status", as: String.self) {
        case "stale": return .stale
        case "recorded":
            // A new row holds exactly what the statement inserted: only what Postgres chose is read back.
            let purchase = item.proven.purchase
            var transaction = TransactionRecord(
                recording: purchase, managementID: try row.decode("id"), state: item.state,
                clientID: item.client.clientID, gameID: item.client.gameID,
                firstVerifiedAt: try row.decode("first_verified_at"))
            transaction.claim = Claim(claimant: item.proven.claimant, claimedAt: try row.decode("claimed_at"))
            return .recorded(
                VerificationOutcome(
                    transaction: transaction, duplicate: false,
                    accountMatch: item.proven.accountMatch, subscription: nil))
        default: return .contended
        }
    }

    /// The whole batch as one JSON parameter, so there is one statement whatever its size.
    private static func statement(_ batch: [Item]) -> PostgresQuery {
        "\(unescaped: sqlHead)\(itemsJSON(batch.enumerated().map { ($0.offset, $0.element) }))\(unescaped: sqlTail)"
    }

    /// The items as a JSON array of records (`ord` is the item's place in its batch), the input of both statements.
    static func itemsJSON(_ items: [(ordinal: Int, item: Item)]) -> String {
        var json = JSONWriter(capacity: items.count * 900)
        json.beginArray()
        for (ordinal, item) in items {
            let request = item.proven.request
            let row = NewTransactionRow(
                purchase: item.proven.purchase, state: item.state, clientID: item.client.clientID,
                gameID: item.client.gameID,
                claimant: item.proven.claimant)
            json.beginObject()
            json.key("ord"); json.number(ordinal)
            TransactionColumns.write(row, into: &json)
            json.key("client_version"); json.number(item.version)
            json.key("request_id"); json.string(request.requestID)
            json.key("evidence_sha256"); json.string(item.proven.evidenceDigest)
            json.endObject()
        }
        json.endArray()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    // Only purchases seen for the first time are settled here: a row that already exists (a
    // retry, a duplicate, another game's) comes back unsettled for `settleSeenBefore`. So the
    // prepared statement reads no row by its own plan: the unique key, through ON CONFLICT, is
    // the only lookup, and a plan prepared while the table was small stays right as it grows.
    static let sqlHead = "WITH input AS (SELECT * FROM jsonb_to_recordset("
    /// The input records and those whose client is still the version they were authenticated with.
    static let sqlInput = """
        ::jsonb) AS x(ord integer, \(TransactionColumns.recordDefinition), client_version bigint, request_id text, evidence_sha256 text)
        ), checked AS (
            SELECT input.* FROM input JOIN clients c ON c.id = input.client_id AND c.version = input.client_version AND c.disabled_at IS NULL
        )
        """
    private static let sqlTail =
        sqlInput + """
            , inserted AS (
                INSERT INTO transactions (\(TransactionColumns.names))
                SELECT \(TransactionColumns.selectList)
                FROM checked ORDER BY store, environment, transaction_id  -- one order for every batch: no deadlock between two
                ON CONFLICT (store, environment, transaction_id) DO NOTHING
                RETURNING id, store, environment, transaction_id, first_verified_at, claimed_at
            ), recorded AS (
                SELECT ck.ord, ck.client_id AS caller_id, ck.request_id AS caller_request_id, ck.player_id AS caller_player_id,
                       ck.evidence_sha256 AS caller_evidence, i.*
                FROM checked ck
                    JOIN inserted i ON i.store = ck.store AND i.environment = ck.environment AND i.transaction_id = ck.transaction_id
            ), attempts AS (
                INSERT INTO verification_attempts (client_id, store, request_id, outcome, transaction_row_id, duplicate, player_id, evidence_sha256)
                SELECT caller_id, store, caller_request_id, 'verified', id, false, caller_player_id, caller_evidence FROM recorded
            )
            SELECT input.ord AS batch_ord,
                   CASE WHEN ck.ord IS NULL THEN 'stale' WHEN r.ord IS NULL THEN 'contended' ELSE 'recorded' END AS batch_status,
                   r.id, r.first_verified_at, r.claimed_at
            FROM input LEFT JOIN checked ck ON ck.ord = input.ord LEFT JOIN recorded r ON r.ord = input.ord
            """
}
