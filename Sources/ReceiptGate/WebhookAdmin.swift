import Crypto
public import Foundation
public import HTTPServer
public import Postgres

/// What an operator can see and do about webhook deliveries: the CLI (`receiptgate webhooks`)
/// and the admin HTTP API share this.
public struct WebhookAdmin: Sendable {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    public struct Event: Encodable, Sendable {
        let eventID: String, clientID: String, type: String, status: String, attempts: Int
        let nextAttemptAt: Date?, lastError: String?, createdAt: Date, deliveredAt: Date?

        enum CodingKeys: String, CodingKey {
            case eventID = "event_id", clientID = "client_id", type, status, attempts, nextAttemptAt = "next_attempt_at"
            case lastError = "last_error", createdAt = "created_at", deliveredAt = "delivered_at"
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(eventID, forKey: .eventID)
            try container.encode(clientID, forKey: .clientID)
            try container.encode(type, forKey: .type)
            try container.encode(status, forKey: .status)
            try container.encode(attempts, forKey: .attempts)
            try container.encode(status == "pending" ? nextAttemptAt.map(Self.format) : nil, forKey: .nextAttemptAt)
            try container.encode(lastError, forKey: .lastError)
            try container.encode(Self.format(createdAt), forKey: .createdAt)
            try container.encode(deliveredAt.map(Self.format), forKey: .deliveredAt)
        }

        static func format(_ date: Date) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: date)
        }
    }

    /// Newest first. `failedOnly`: dead events and pending ones that have failed at least once.
    public func list(failedOnly: Bool, limit: Int = 100) async throws -> [Event] {
        try await pool.query("""
            SELECT event_id::text AS event_id, client_id, event_type, status, attempts, next_attempt_at, last_error, created_at, delivered_at
            FROM outbox
            WHERE NOT \(failedOnly) OR status = 'dead' OR (status = 'pending' AND attempts > 0)
            ORDER BY id DESC LIMIT \(limit)
            """).map { row in
            Event(eventID: try row.decode("event_id"), clientID: try row.decode("client_id"), type: try row.decode("event_type"),
                  status: try row.decode("status"), attempts: try row.decode("attempts"), nextAttemptAt: try row.decode("next_attempt_at"),
                  lastError: try row.decode("last_error"), createdAt: try row.decode("created_at"), deliveredAt: try row.decode("delivered_at"))
        }
    }

    /// Queues the event for another delivery now (dead, pending or even delivered). False if unknown.
    public func redeliver(eventID: String) async throws -> Bool {
        guard let id = UUID(uuidString: eventID) else { return false }
        return try await pool.execute("""
            UPDATE outbox SET status = 'pending', next_attempt_at = now(), lease_until = NULL WHERE event_id = \(id)
            """) == 1
    }

    /// `GET /admin/webhooks[?failed=true]` and `POST /admin/webhooks/{event_id}/redeliver`, behind
    /// `Authorization: Bearer <RECEIPTGATE_ADMIN_TOKEN>`.
    public func register(on router: inout Router, token: String) {
        let check: @Sendable (HTTPRequest) throws -> Void = { request in
            let given = request.headers["Authorization"].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil } ?? ""
            guard ConstantTime.equals(Data(given.utf8), Data(token.utf8)) else {
                throw HTTPError(status: 401, code: "UNAUTHORIZED", message: "admin token required")
            }
        }
        router.get("/admin/webhooks") { [self] request in
            try check(request)
            return .json(["events": try await list(failedOnly: request.query["failed"] == "true")])
        }
        router.post("/admin/webhooks/{event_id}/redeliver") { [self] request in
            try check(request)
            let eventID = try request.parameter("event_id")
            guard try await redeliver(eventID: eventID) else {
                throw HTTPError(status: 404, code: "NOT_FOUND", message: "no webhook event \(eventID)")
            }
            return .json(["status": "queued", "event_id": eventID.lowercased()])
        }
    }
}
