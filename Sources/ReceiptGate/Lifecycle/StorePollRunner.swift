import Foundation
import ReceiptCore
import Synchronization

/// Runs store providers' scheduled polls (`StoreRegistration.poller`): each every `interval`, in
/// one process at a time across the cluster (a lease row in `store_polls`), recording what a
/// poll finds through the same path as push notifications.
final class StorePollRunner: Sendable {
    let polls: PollRepository
    let clients: ClientRepository
    let notifications: NotificationRepository
    let logger: Logger
    let metrics: Metrics?
    /// This process, as lease owner.
    let owner = "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UUID().uuidString.prefix(8))"
    private let tasks = LockedTasks()

    init(polls: PollRepository, clients: ClientRepository, notifications: NotificationRepository, logger: Logger, metrics: Metrics? = nil) {
        self.metrics = metrics
        self.polls = polls
        self.clients = clients
        self.notifications = notifications
        self.logger = logger
    }

    func start(_ registrations: [StoreRegistration]) {
        for registration in registrations {
            guard let poller = registration.poller else { continue }
            tasks.add(Task { [self] in
                while !Task.isCancelled {
                    await runOnce(poller, registration: registration)
                    try? await Task.sleep(for: min(poller.interval, .seconds(5)))
                }
            })
        }
    }

    func stop() async { await tasks.cancelAll() }

    /// One run if this process can take the lease; the lease then stays until the next run is due.
    /// The run is recorded (`store_poll_runs`) and counted on `/metrics`: what it found, and how
    /// much of that was new (no push had delivered it).
    func runOnce(_ poller: any StorePolling, registration: StoreRegistration) async {
        let name = poller.pollName
        let interval = Self.seconds(poller.interval)
        let lease = max(interval, 300)
        let started = Date()
        let tally = Mutex((found: 0, new: 0))
        var failure: String?
        do {
            guard try await polls.acquire(name, owner: owner, seconds: lease) else { return }
            let kind = registration.declaration.identifiers
            let owners = try await clients.owners(store: registration.store) { !$0.info.appIdentifiers(kind).isEmpty }
            let cursors = Cursors(polls: polls, name: name, owner: owner, leaseSeconds: lease)
            let notifications = notifications, logger = logger
            try await poller.poll(owners: owners, cursors: cursors) { found in
                for notification in found {
                    let duplicate = try await notifications.record(notification, rawBody: notification.rawBody ?? notification.decodedJSON, kind: kind)
                    tally.withLock { $0.found += 1; if !duplicate { $0.new += 1 } }
                    if !duplicate {
                        logger.info("store poll recorded an event", ["poll": name, "notification.id": notification.notificationID,
                                                                     "notification.type": notification.type])
                    }
                }
            }
            try await polls.finish(name, owner: owner, nextInSeconds: interval)
        } catch is CancellationError {
            return
        } catch {
            // The next run (here or elsewhere) resumes from the saved cursor, after the usual
            // interval: a store's rate limit or outage is not asked again at once.
            logger.warning("store poll failed", ["poll": name, "error": "\(error)"])
            failure = String("\(error)".prefix(2000))
            try? await polls.finish(name, owner: owner, nextInSeconds: interval)
        }
        let (found, new) = tally.withLock { $0 }
        metrics?.recordPollRun(poll: name, failed: failure != nil, found: found, new: new)
        do {
            try await polls.recordRun(name, process: owner, startedAt: started, found: found, new: new, error: failure)
        } catch {
            logger.warning("store poll run not recorded", ["poll": name, "error": "\(error)"])
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    struct Cursors: PollCursorStore {
        let polls: PollRepository
        let name: String
        let owner: String
        let leaseSeconds: Double

        func cursor(_ key: String) async throws -> String? { try await polls.cursor(key) }

        func setCursor(_ key: String, to value: String) async throws {
            try await polls.setCursor(key, to: value, name: name, owner: owner, leaseSeconds: leaseSeconds)
        }
    }
}

/// The runner's loop tasks, cancelled together under a lock.
private final class LockedTasks: Sendable {
    private let tasks = Mutex<[Task<Void, Never>]>([])

    func add(_ task: Task<Void, Never>) { tasks.withLock { $0.append(task) } }

    func cancelAll() async {
        let current = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        for task in current { task.cancel() }
        for task in current { await task.value }
    }
}
