import Foundation
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

    /// Queues an event in our envelope.
    static func enqueue(event type: String, payload: some Encodable, client: String, aggregateKey: String, target: OutboxTarget = .webhook,
                        on connection: PostgresConnection) throws {
        let eventID = UUID()
        let body = try JSONEncoder.receiptGateStorage.encode(Envelope(eventID: eventID.uuidString.lowercased(), type: type, data: payload))
        try insert(eventID: eventID, message: OutboxMessage(clientID: client, target: target, type: type, aggregateKey: aggregateKey, body: body),
                   on: connection)
    }

    /// Queues a message whose body someone else rendered (a refund callback, an e-mail), sent as
    /// is. An e-mail is sealed under the master key (its one-time link must not sit readable in
    /// the database or its backups); `secrets` is required for one.
    static func enqueue(_ message: OutboxMessage, sealingMailWith secrets: SecretBox? = nil, notBefore: Date? = nil,
                        on connection: PostgresConnection) throws {
        let eventID = UUID()
        var stored = message
        if message.target == .email {
            guard let secrets else { throw ClientStoreError.invalid("an e-mail is queued only sealed, and no master key was given") }
            stored.body = try sealedMail(message.body, eventID: eventID, secrets: secrets)
        }
        try insert(eventID: eventID, message: stored, notBefore: notBefore, on: connection)
    }

    /// `{"sealed": base64(AES-GCM)}`, bound to the row's event id so a box copied onto another row does not open.
    static func sealedMail(_ body: Data, eventID: UUID, secrets: SecretBox) throws -> Data {
        let box = try secrets.seal(String(decoding: body, as: UTF8.self), owner: mailOwner(eventID.uuidString.lowercased()))
        return try JSONEncoder.receiptGateStorage.encode(["sealed": box.base64EncodedString()])
    }

    /// The e-mail as it must be sent; a row from before mail was sealed is returned as it is.
    func openedMail(_ payload: String, eventID: String) throws -> String {
        struct Sealed: Decodable { let sealed: String }
        guard let sealed = try? JSONDecoder().decode(Sealed.self, from: Data(payload.utf8)) else { return payload }
        guard let box = Data(base64Encoded: sealed.sealed) else { throw ClientStoreError.invalid("a sealed e-mail is not base64") }
        return try secrets.open(box, owner: Self.mailOwner(eventID.lowercased()))
    }

    static func mailOwner(_ eventID: String) -> String { "outbox.email:\(eventID)" }

    /// `notBefore`: the message waits until then (a refund answer waits for the game's report).
    private static func insert(eventID: UUID, message: OutboxMessage, notBefore: Date? = nil, on connection: PostgresConnection) throws {
        try connection.execute("""
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, payload, target, next_attempt_at)
            VALUES (\(eventID), \(message.clientID), \(message.type), \(message.aggregateKey), \(String(decoding: message.body, as: UTF8.self))::jsonb,
                    \(message.target.rawValue), COALESCE(\(notBefore)::timestamptz, now()))
            """)
    }

    struct Claimed: Sendable {
        let id: Int64, eventID: String, clientID: String, type: String, payload: String, attempts: Int, createdAt: Date, target: OutboxTarget
        /// Why a sealed e-mail did not open (then `payload` is empty and nothing may be sent).
        var unopened: String?
    }

    /// Claims due messages for `targets` (only the oldest pending one per aggregate, so order
    /// holds), each with a lease so no other worker sends it meanwhile.
    func claim(targets: [OutboxTarget], limit: Int, lease: Int) async throws -> [Claimed] {
        let rows = try await pool.query("""
            UPDATE outbox SET lease_until = now() + make_interval(secs => \(lease))
            WHERE id IN (
                SELECT o.id FROM outbox o
                WHERE o.status = 'pending' AND o.next_attempt_at <= now() AND (o.lease_until IS NULL OR o.lease_until < now())
                  AND o.target = ANY (\(targets.map(\.rawValue))::text[])
                  AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.client_id = o.client_id AND p.aggregate_key = o.aggregate_key AND p.target = o.target
                                  AND p.status = 'pending' AND p.id < o.id)
                ORDER BY o.id LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            RETURNING id, event_id, client_id, event_type, payload::text AS payload, attempts, created_at, target
            """)
        return try rows.map { row in
            let target = try TransactionRows.typed(row, "target", as: OutboxTarget.self)
            let eventID: String = try row.decode("event_id"), stored: String = try row.decode("payload")
            // Opened only here, just before sending; a box that does not open is sent as nothing: the
            // worker records why on the row and retries it.
            var payload = stored, unopened: String?
            if target == .email {
                do { payload = try openedMail(stored, eventID: eventID) } catch {
                    payload = ""
                    unopened = "the sealed e-mail did not open: \(error)"
                }
            }
            return Claimed(id: try row.decode("id"), eventID: eventID, clientID: try row.decode("client_id"),
                           type: try row.decode("event_type"), payload: payload, attempts: try row.decode("attempts"),
                           createdAt: try row.decode("created_at"), target: target, unopened: unopened)
        }
    }

    func markDelivered(_ id: Int64) async throws {
        try await pool.execute("""
            UPDATE outbox SET status = 'delivered', delivered_at = now(), attempts = attempts + 1, lease_until = NULL, last_error = NULL
            WHERE id = \(id)
            """)
    }

    func markFailed(_ id: Int64, attempts: Int, error: String, dead: Bool, retryInSeconds: Double) async throws {
        try await pool.execute("""
            UPDATE outbox SET attempts = \(attempts), last_error = \(String(error.prefix(500))), lease_until = NULL,
                status = \(dead ? "dead" : "pending"), next_attempt_at = now() + make_interval(secs => \(retryInSeconds))
            WHERE id = \(id)
            """)
    }

    /// An outbox message as an operator sees it.
    public struct Event: Encodable, Sendable {
        let eventID: String, clientID: String, type: String, target: String, status: String, attempts: Int
        let nextAttemptAt: Date?, lastError: String?, createdAt: Date, deliveredAt: Date?

        /// `failedCondition`, for a message already read.
        var hasFailed: Bool { status == "dead" || (status == "pending" && attempts > 0) }

        enum CodingKeys: String, CodingKey {
            case eventID = "event_id", clientID = "client_id", type, target, status, attempts, nextAttemptAt = "next_attempt_at"
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
            try container.encode(status == "pending" ? nextAttemptAt.map(Timestamps.iso8601) : nil, forKey: .nextAttemptAt)
            try container.encode(lastError, forKey: .lastError)
            try container.encode(Timestamps.iso8601(createdAt), forKey: .createdAt)
            try container.encode(deliveredAt.map(Timestamps.iso8601), forKey: .deliveredAt)
        }
    }

    /// Newest first. `failedOnly`: dead events and pending ones that have failed at least once.
    public func list(failedOnly: Bool, limit: Int = 100) async throws -> [Event] {
        try await pool.query("""
            SELECT \(unescaped: Self.eventColumns) FROM outbox
            WHERE NOT \(failedOnly) OR \(unescaped: Self.failedCondition)
            ORDER BY id DESC LIMIT \(limit)
            """).map(Self.event)
    }

    /// A message that failed: given up (dead), or waiting to be tried again after a failure.
    static let failedCondition = "(status = 'dead' OR (status = 'pending' AND attempts > 0))"

    static let eventColumns = """
        event_id::text AS event_id, client_id, event_type, target, status, attempts, next_attempt_at, last_error, created_at, delivered_at
        """

    static func event(_ row: PostgresRow) throws -> Event {
        Event(eventID: try row.decode("event_id"), clientID: try row.decode("client_id"), type: try row.decode("event_type"),
              target: try row.decode("target"), status: try row.decode("status"), attempts: try row.decode("attempts"),
              nextAttemptAt: try row.decode("next_attempt_at"), lastError: try row.decode("last_error"),
              createdAt: try row.decode("created_at"), deliveredAt: try row.decode("delivered_at"))
    }

    /// Queues the event for another delivery now (dead, pending or even delivered). False if unknown.
    public func redeliver(eventID: String) async throws -> Bool {
        guard let id = UUID(uuidString: eventID) else { return false }
        return try await pool.execute("""
            UPDATE outbox SET status = 'pending', next_attempt_at = now(), lease_until = NULL WHERE event_id = \(id)
            """) == 1
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
