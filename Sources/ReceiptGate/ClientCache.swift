import Foundation
import Postgres

/// Enabled clients with their opened secrets, kept in memory so that authenticating a request
/// costs no database round trip and no AES-GCM open.
///
/// Every change to a client row notifies `receiptgate_clients` at commit (migration 12), from any
/// process, the CLI included; the listener drops that client here as soon as the notification
/// arrives. The cache is trusted only while the listener is connected: from the moment the
/// connection is lost until `LISTEN` is in place again, nothing is served from memory and
/// everything is read from the database. Notifications are asynchronous (typically well under a
/// millisecond), so the write path does not rely on them alone: a verification's statement checks
/// the version the client had when it was cached (`ClientRepository.isCurrent`, `RecordBatcher`).
final class ClientCache: @unchecked Sendable {
    static let channel = "receiptgate_clients"
    /// Enough for every tenant of a large deployment; past it the cache starts over.
    static let capacity = 10_000

    private let repository: ClientRepository
    private let lock = NSLock()  // guards every field below
    private var entries: [String: AuthenticatedClient] = [:]
    /// Only while the listener is connected.
    private var live = false
    /// Bumped by every invalidation, so a read that raced one is not cached afterwards.
    private var generation: UInt64 = 0
    private var listener: PostgresListener?

    init(repository: ClientRepository) {
        self.repository = repository
    }

    /// Starts listening; until the listener is connected every lookup reads the database.
    func start(connectionString: String) {
        let listener = PostgresListener(connectionString: connectionString, channel: Self.channel, callbacks: .init(
            onListening: { [weak self] in self?.reset(live: true) },
            onLost: { [weak self] in self?.reset(live: false) },
            onNotification: { [weak self] clientID in self?.invalidate(clientID) }))
        lock.withLock { self.listener = listener }
        listener.start()
    }

    func stop() {
        let listener = lock.withLock { () -> PostgresListener? in
            live = false
            entries.removeAll()
            return self.listener
        }
        listener?.stop()
    }

    /// The enabled client with its secret and version, from memory when trusted; nil for an
    /// unknown or disabled client (those are never cached).
    func entry(for clientID: String) async throws -> AuthenticatedClient? {
        let (cached, seenGeneration) = lock.withLock { (entries[clientID], generation) }
        if let cached { return cached }
        guard let fresh = try await repository.authenticationEntry(for: clientID) else { return nil }
        lock.withLock {
            guard live, generation == seenGeneration else { return }
            if entries.count >= Self.capacity { entries.removeAll() }
            entries[clientID] = fresh
        }
        return fresh
    }

    /// Forgets one client (its row changed somewhere).
    func invalidate(_ clientID: String) {
        lock.withLock {
            generation &+= 1
            entries[clientID] = nil
        }
    }

    private func reset(live: Bool) {
        lock.withLock {
            generation &+= 1
            entries.removeAll()
            self.live = live
        }
    }

    /// Whether lookups are currently served from memory (tests).
    var isLive: Bool { lock.withLock { live } }
}
