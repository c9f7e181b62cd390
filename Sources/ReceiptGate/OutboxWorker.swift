public import Foundation
public import HTTPClient
public import Postgres
public import ReceiptCore

/// Delivers the outbox to game servers: at least once, in order per transaction, signed with the
/// client's HMAC scheme, retried with exponential back-off and jitter for three days. Any number
/// of processes may run it: an event is claimed with a lease (`FOR UPDATE SKIP LOCKED`), so two
/// never send the same event at the same time, and a crashed sender's lease simply runs out.
public final class OutboxWorker: Sendable {
    public struct Configuration: Sendable {
        public var pollInterval: Duration = .milliseconds(500)
        public var batchSize = 10
        public var attemptTimeout: Duration = .seconds(10)
        public var lease: Duration = .seconds(60)
        public var baseDelay: Duration = .seconds(10)
        public var maxDelay: Duration = .seconds(3600)
        public var giveUpAfter: Duration = .seconds(3 * 86_400)
        public init() {}
    }

    let pool: PostgresPool
    let clients: ClientStore
    let http: HTTPClient
    let configuration: Configuration
    let logger: Logger
    private let task = TaskBox()

    public init(pool: PostgresPool, clients: ClientStore, configuration: Configuration = Configuration(), logger: Logger) {
        self.pool = pool
        self.clients = clients
        self.configuration = configuration
        self.logger = logger
        var http = HTTPClient.Configuration()
        http.retry = .none  // the outbox is the retry mechanism
        http.timeout = configuration.attemptTimeout
        http.threadCount = 2
        self.http = HTTPClient(http)
    }

    public func start() {
        task.set(Task { [self] in
            while !Task.isCancelled {
                let delivered = (try? await deliverDue()) ?? 0
                if delivered == 0 { try? await Task.sleep(for: configuration.pollInterval) }
            }
        })
    }

    public func stop() async {
        await task.cancelAndWait()
    }

    struct Claimed: Sendable {
        let id: Int64, eventID: String, clientID: String, type: String, payload: String, attempts: Int, createdAt: Date, target: String
    }

    /// Claims due events (only the oldest pending one per transaction, so order holds) and sends them.
    @discardableResult
    public func deliverDue() async throws -> Int {
        let leaseSeconds = Int(configuration.lease.components.seconds)
        let rows = try await pool.query("""
            UPDATE outbox SET lease_until = now() + make_interval(secs => \(leaseSeconds))
            WHERE id IN (
                SELECT o.id FROM outbox o
                WHERE o.status = 'pending' AND o.next_attempt_at <= now() AND (o.lease_until IS NULL OR o.lease_until < now())
                  AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.client_id = o.client_id AND p.aggregate_key = o.aggregate_key AND p.target = o.target
                                  AND p.status = 'pending' AND p.id < o.id)
                ORDER BY o.id LIMIT \(configuration.batchSize)
                FOR UPDATE SKIP LOCKED)
            RETURNING id, event_id, client_id, event_type, payload::text AS payload, attempts, created_at, target
            """)
        let claimed = try rows.map { row in
            Claimed(id: try row.decode("id"), eventID: try row.decode("event_id"), clientID: try row.decode("client_id"),
                    type: try row.decode("event_type"), payload: try row.decode("payload"), attempts: try row.decode("attempts"),
                    createdAt: try row.decode("created_at"), target: try row.decode("target"))
        }
        await withTaskGroup(of: Void.self) { group in
            for event in claimed { group.addTask { await self.deliver(event) } }
        }
        return claimed.count
    }

    private func deliver(_ event: Claimed) async {
        var failure: String?
        if let (client, secret) = try? await clients.secret(for: event.clientID), let url = Self.url(of: client, for: event.target) {
            let body = Data(event.payload.utf8)
            let timestamp = String(Int(Date().timeIntervalSince1970))
            let signature = ClientAuthentication.signature(secret: secret, clientID: client.clientID, timestamp: timestamp, body: body)
            let request = HTTPClient.Request(method: "POST", url: url, headers: [
                ("Content-Type", "application/json"), ("X-Client-ID", client.clientID), ("X-Timestamp", timestamp),
                ("X-Signature", signature), ("X-Event-Id", event.eventID), ("X-Event-Type", event.type),
            ], body: body)
            do {
                let response = try await http.send(request)
                if !(200..<300).contains(response.status) { failure = "HTTP \(response.status)" }
            } catch {
                failure = "\(error)"
            }
        } else {
            failure = "client has no \(event.target) URL (or is disabled)"
        }
        do {
            if let failure {
                let attempts = event.attempts + 1
                let giveUp = Date().timeIntervalSince(event.createdAt) >= Double(configuration.giveUpAfter.components.seconds)
                let delay = Self.delay(afterAttempts: attempts, base: configuration.baseDelay, max: configuration.maxDelay)
                try await pool.execute("""
                    UPDATE outbox SET attempts = \(attempts), last_error = \(String(failure.prefix(500))), lease_until = NULL,
                        status = \(giveUp ? "dead" : "pending"),
                        next_attempt_at = now() + make_interval(secs => \(Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18))
                    WHERE id = \(event.id)
                    """)
                logger.warning("webhook delivery failed", ["event.id": event.eventID, "client.id": event.clientID, "attempts": String(attempts),
                                                           "error": String(failure.prefix(200)), "dead": String(giveUp)])
            } else {
                try await pool.execute("""
                    UPDATE outbox SET status = 'delivered', delivered_at = now(), attempts = attempts + 1, lease_until = NULL, last_error = NULL
                    WHERE id = \(event.id)
                    """)
            }
        } catch {
            // The lease runs out and another attempt follows: at least once, never lost.
            logger.error("could not record a webhook outcome", ["event.id": event.eventID, "error": "\(error)"])
        }
    }

    static func url(of client: Client, for target: String) -> String? {
        switch target {
        case Outbox.Target.refundCallback.rawValue: client.refundCallbackURL
        case Outbox.Target.delivery.rawValue: client.deliveryURL
        default: client.webhookURL
        }
    }

    /// Exponential back-off with jitter: base × 2^(n−1), capped, then between half and all of it.
    static func delay(afterAttempts attempts: Int, base: Duration, max: Duration) -> Duration {
        let exponential = base * Int(1 << Swift.min(attempts - 1, 30))
        let capped = Swift.min(exponential, max)
        return capped / 2 + capped / 2 * Double.random(in: 0...1)
    }
}

/// The worker's loop task, replaced and cancelled under a lock.
private final class TaskBox: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<Void, Never>?

    func set(_ task: Task<Void, Never>) {
        lock.withLock { self.task = task }
    }

    func cancelAndWait() async {
        let current = lock.withLock { () -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        current?.cancel()
        await current?.value
    }
}
