import Foundation
import Postgres
import ReceiptCore
import Synchronization

/// Enabled clients with their opened secrets, kept in memory so that authenticating a request
/// costs no database round trip and no AES-GCM open.
///
/// Every change to a client row notifies `receiptgate_clients` at commit (migration 12), from any
/// process, the CLI included; the listener drops that client here as soon as the notification
/// arrives. The cache is trusted only while the listener is connected: from the moment the
/// connection is lost (or stops answering its heartbeat) until `LISTEN` is in place again, nothing
/// is served from memory and everything is read from the database; what was cached before is
/// dropped, since notifications sent meanwhile are gone. Notifications are asynchronous (typically
/// well under a millisecond), so the write path does not rely on them alone: a verification's
/// statement checks the version the client had when it was cached (`ClientRepository.isCurrent`,
/// `RecordBatcher`).
///
/// Entries also expire `lifetime` after they were read, whatever the listener says: a listener
/// that stalls before its heartbeat notices, or a notification lost some other way, cannot keep a
/// disabled client or a rotated secret working longer than that.
final class ClientCache: ClientDirectory, Sendable {
    static let channel = "receiptgate_clients"
    /// Enough for every tenant of a large deployment; past it the cache starts over.
    static let capacity = 10_000

    private struct Entry {
        let client: AuthenticatedClient
        let expires: ContinuousClock.Instant
    }

    private struct State {
        var entries: [String: Entry] = [:]
        /// Only while the listener is connected.
        var live = false
        var stopped = false
        /// Bumped by every invalidation, so a read that raced one is not cached afterwards.
        var generation: UInt64 = 0
        /// Client changes the listener has heard of.
        var changesHeard = 0
        var listener: PostgresListener?
    }

    private let repository: ClientRepository
    private let lifetime: Duration
    private let logger: Logger?
    private let clock = ContinuousClock()
    private let state = Mutex(State())

    /// A zero `lifetime` keeps nothing: every lookup reads the database.
    init(repository: ClientRepository, lifetime: Duration = .seconds(5), logger: Logger? = nil) {
        self.repository = repository
        self.lifetime = lifetime
        self.logger = logger
    }

    /// Starts listening; until the listener is connected every lookup reads the database.
    func start(connectionString: String) {
        guard lifetime > .zero else { return }
        let listener = PostgresListener(
            connectionString: connectionString, channel: Self.channel,
            callbacks: .init(
                onListening: { [weak self] in self?.reset(live: true) },
                onLost: { [weak self] in self?.reset(live: false) },
                onNotification: { [weak self] clientID in self?.heard(clientID) }))
        state.withLock { $0.listener = listener }
        listener.start()
    }

    func stop() {
        let listener = state.withLock { state -> PostgresListener? in
            state.stopped = true
            state.live = false
            state.entries.removeAll()
            return state.listener
        }
        listener?.stop()
    }

    /// The enabled client with its secret and version, from memory when trusted and fresh; nil for
    /// an unknown or disabled client (those are never cached).
    func entry(for clientID: String) async throws -> AuthenticatedClient? {
        let now = clock.now
        let (cached, seenGeneration) = state.withLock { ($0.entries[clientID], $0.generation) }
        if let cached, cached.expires > now { return cached.client }
        guard let fresh = try await repository.authenticationEntry(for: clientID) else { return nil }
        state.withLock { state in
            guard state.live, state.generation == seenGeneration, !fresh.fromStandby else { return }
            if state.entries.count >= Self.capacity { state.entries.removeAll() }
            // Counted from before the read: the row may have changed since it was taken.
            state.entries[clientID] = Entry(client: fresh, expires: now + lifetime)
        }
        return fresh
    }

    private func heard(_ clientID: String) {
        state.withLock { state in
            Self.forget(clientID, in: &state)
            state.changesHeard += 1
        }
    }

    /// Forgets one client (its row changed somewhere).
    func invalidate(_ clientID: String) {
        state.withLock { Self.forget(clientID, in: &$0) }
    }

    private static func forget(_ clientID: String, in state: inout State) {
        state.generation &+= 1
        state.entries[clientID] = nil
    }

    private func reset(live: Bool) {
        let (wasLive, isStopped, isLive) = state.withLock { state -> (Bool, Bool, Bool) in
            let wasLive = state.live
            state.generation &+= 1
            state.entries.removeAll()
            state.live = live && !state.stopped
            return (wasLive, state.stopped, state.live)
        }
        if wasLive && !isLive && !isStopped {
            logger?.warning("client cache listener lost; clients are read from the database until it is back")
        }
    }

    /// What `/metrics` shows of the cache.
    struct Status: Sendable {
        /// Whether lookups are served from memory (`receiptgate_client_cache_listening`).
        let listening: Bool
        /// Client changes heard from the database (`receiptgate_client_cache_changes_heard_total`).
        let changesHeard: Int
    }

    var status: Status { state.withLock { Status(listening: $0.live, changesHeard: $0.changesHeard) } }
}
