import Foundation
import ReceiptCore
import Synchronization

/// Runs store providers' scheduled polls (`StoreRegistration.poller`, and the read-back of quiet
/// subscriptions where a store can do it): each every `interval`, in one process at a time across
/// the cluster (a lease row in `store_polls`), recording what a poll finds through the same path
/// as push notifications. An operator can also run a poll by hand (`receiptgate reconcile`).
final class StorePollRunner: Sendable {
    let polls: PollRepository
    let clients: ClientRepository
    let intake: StoreNewsIntake
    let logger: Logger
    let metrics: Metrics?
    /// When a run started and finished, as recorded.
    let now: @Sendable () -> Date
    /// This process, as lease owner.
    let owner = "\(ProcessInfo.processInfo.hostName):\(getpid()):\(UUID().uuidString.prefix(8))"
    private let tasks = LockedTasks()

    init(
        polls: PollRepository, clients: ClientRepository, intake: StoreNewsIntake, logger: Logger,
        metrics: Metrics? = nil, now: @escaping @Sendable () -> Date
    ) {
        self.now = now
        self.metrics = metrics
        self.polls = polls
        self.clients = clients
        self.intake = intake
        self.logger = logger
    }

    /// A poll and the store it belongs to.
    struct ScheduledPoll: Sendable {
        let poller: any StorePolling
        let registration: StoreRegistration
    }

    /// Every poll the stores ask for: each store's own, and the read-back of its quiet
    /// subscriptions where the store can read one back and the setting has not turned it off.
    static func polls(
        for registrations: [StoreRegistration], quiet: QuietSubscriptionSettings,
        queries: QuietSubscriptionQueries
    ) -> [ScheduledPoll] {
        registrations.flatMap { registration -> [ScheduledPoll] in
            var polls = registration.poller.map { [ScheduledPoll(poller: $0, registration: registration)] } ?? []
            if let reader = registration.subscriptionReader, quiet.intervalSeconds > 0 {
                let poll = QuietSubscriptionPoll(
                    store: registration.store, reader: reader, queries: queries, settings: quiet)
                polls.append(ScheduledPoll(poller: poll, registration: registration))
            }
            return polls
        }
    }

    func start(_ scheduled: [ScheduledPoll]) {
        for poll in scheduled {
            tasks.add(
                Task { [self] in
                    while !Task.isCancelled {
                        await runOnce(poll.poller, registration: poll.registration)
                        try? await Task.sleep(for: min(poll.poller.interval, .seconds(5)))
                    }
                })
        }
    }

    func stop() async { await tasks.cancelAll() }

    /// One run if this process can take the lease; the lease then stays until the next run is due
    /// (later after a store asked to wait). The run is recorded (`store_poll_runs`) and counted on
    /// `/metrics`: what it found, how much of that no push had delivered, what it changed.
    func runOnce(_ poller: any StorePolling, registration: StoreRegistration) async {
        let name = poller.pollName
        let interval = Self.seconds(poller.interval)
        let lease = max(interval, 300)
        let started = now()
        do {
            guard try await polls.acquire(name, owner: owner, seconds: lease) else { return }
        } catch {
            logger.warning("store poll lease not taken", ["poll": name, "error": "\(error)"])
            return
        }
        let run = Run(since: nil, cursors: .database(polls: polls, name: name, owner: owner, leaseSeconds: lease))
        let outcome = await perform(poller, registration: registration, run: run)
        if outcome.cancelled { return }
        let wait = max(interval, outcome.retryAfter.map(Self.seconds) ?? 0)
        try? await polls.finish(name, owner: owner, nextInSeconds: wait)
        metrics?.recordPollRun(poll: name, failed: outcome.failure != nil, tally: run.tally)
        await record(
            PollRepository.Run(
                poll: name, process: owner, startedAt: started, finishedAt: now(), tally: run.tally,
                byHand: false, error: outcome.failure))
    }

    /// A run an operator asked for: from `since` (or where the schedule stands, for polls without
    /// a window), with cursors of its own, so the schedule's are not moved. Refused while another
    /// by-hand run of the same poll is under way; a scheduled run may overlap it (what both find
    /// is recorded once).
    func runByHand(
        _ poller: any StorePolling, registration: StoreRegistration, since: Date?
    ) async throws -> PollRepository.Run {
        let name = poller.pollName + ".by_hand"
        guard try await polls.acquire(name, owner: owner, seconds: 3600) else {
            throw ByHandRunUnderWay(poll: poller.pollName)
        }
        let started = now()
        let run = Run(since: since, cursors: .memory(Run.MemoryCursors()))
        let outcome = await perform(poller, registration: registration, run: run)
        try? await polls.finish(name, owner: owner, nextInSeconds: 0)
        let record = PollRepository.Run(
            poll: poller.pollName, process: owner, startedAt: started, finishedAt: now(), tally: run.tally,
            byHand: true, error: outcome.cancelled ? "cancelled" : outcome.failure)
        await self.record(record)
        return record
    }

    private struct Outcome { var failure: String?; var retryAfter: Duration?; var cancelled = false }

    private func perform(_ poller: any StorePolling, registration: StoreRegistration, run: Run) async -> Outcome {
        let name = poller.pollName
        do {
            let kind = registration.declaration.identifiers
            let owners = try await clients.owners(store: registration.store) { !$0.info.appIdentifiers(kind).isEmpty }
            let intake = intake, logger = logger
            try await poller.poll(owners: owners, run: run) { found in
                for notification in found {
                    let recorded = try await intake.take(
                        notification, rawBody: notification.rawBody ?? notification.decodedJSON, kind: kind,
                        requestID: "poll:\(name)")
                    run.count {
                        $0.found += 1; if !recorded.duplicate { $0.new += 1 }; if recorded.changed { $0.changed += 1 }
                    }
                    if !recorded.duplicate {
                        logger.info(
                            "store poll recorded an event",
                            [
                                "poll": name, "notification.id": notification.notificationID,
                                "notification.type": notification.type, "changed": String(recorded.changed),
                            ])
                    }
                }
            }
            return Outcome()
        } catch is CancellationError {
            return Outcome(cancelled: true)
        } catch {
            // The next run (here or elsewhere) resumes from the saved cursor, after the usual
            // interval or what the store asked: a rate limit or an outage is not asked again at once.
            logger.warning("store poll failed", ["poll": name, "error": "\(error)"])
            return Outcome(
                failure: String("\(error)".prefix(2000)), retryAfter: (error as? any StoreAskedToWait)?.retryAfter)
        }
    }

    private func record(_ run: PollRepository.Run) async {
        do {
            try await polls.recordRun(run)
        } catch {
            logger.warning("store poll run not recorded", ["poll": run.poll, "error": "\(error)"])
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// One run's cursors and counts, as the poller sees them.
    final class Run: PollRun {
        enum Cursors {
            /// The schedule's, in Postgres, saved only while this process holds the lease.
            case database(polls: PollRepository, name: String, owner: String, leaseSeconds: Double)
            /// A by-hand run's own.
            case memory(MemoryCursors)
        }

        final class MemoryCursors: Sendable {
            let saved = Mutex<[String: String]>([:])
        }

        let since: Date?
        private let cursors: Cursors
        private let counts = Mutex(PollTally())

        init(since: Date?, cursors: Cursors) {
            self.since = since
            self.cursors = cursors
        }

        var tally: PollTally { counts.withLock { $0 } }

        func count(_ change: (inout PollTally) -> Void) { counts.withLock { change(&$0) } }

        func pageRead() { count { $0.pages += 1 } }

        func subscriptionReread() { count { $0.reread += 1 } }

        func cursor(_ key: String) async throws -> String? {
            switch cursors {
            case .database(let polls, _, _, _): try await polls.cursor(key)
            case .memory(let memory): memory.saved.withLock { $0[key] }
            }
        }

        func setCursor(_ key: String, to value: String) async throws {
            switch cursors {
            case .database(let polls, let name, let owner, let leaseSeconds):
                try await polls.setCursor(key, to: value, name: name, owner: owner, leaseSeconds: leaseSeconds)
            case .memory(let memory):
                memory.saved.withLock { $0[key] = value }
            }
        }
    }
}

struct ByHandRunUnderWay: Error, CustomStringConvertible {
    let poll: String
    var description: String { "another by-hand run of \(poll) is under way; try again when it ends" }
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
