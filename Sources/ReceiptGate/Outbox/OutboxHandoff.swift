import Synchronization

/// Messages a verification wrote *handed*, passed to this process's outbox worker in memory: a
/// new purchase's webhook is written in the group commit that records the purchase, already in
/// the delivered state a success leaves it in, and sent as soon as that commits, with no statement
/// to place it, none to claim it and none to mark it delivered (one row version a message). Until
/// it is settled it is in flight, under its commit's lease (`outbox_handed`): a failure or a park
/// puts it back in the pending state, and once every message of a commit is settled the worker
/// deletes the commit's row (`OutboxWorker.vouchHanded`). The database stays the truth: if this process
/// stops before settling them, the lease runs out and any worker puts what is still in flight
/// back in the pending state, to be sent again (`OutboxRepository.recoverHanded`).
///
/// Bounded: a writer reserves room before it writes a message handed, and what it cannot reserve
/// is written the ordinary way, so a slow receiver never piles messages up in memory.
final class OutboxHandoff: Sendable {
    private struct State {
        /// What waits for a slot, by client; `clients` names each client with something waiting
        /// once, in the order they are served.
        var handed: [String: HandedQueue] = [:]
        var clients: [String] = []
        var count = 0
        /// Reserved by writers whose transactions have not ended yet.
        var reserved = 0
        var waiter: CheckedContinuation<Void, Never>?
        /// Something was handed since the worker last took: what wakes it (messages left waiting
        /// for a slot do not, or its loop would spin until a slot frees).
        var fresh = false
        /// The worker stopped: no more room is granted.
        var closed = false
        /// Handed batches (by their first id) with messages not settled yet, and when written.
        var batches: [Int64: (unsettled: Int, written: ContinuousClock.Instant)] = [:]
        /// Handed batches whose every message is settled: their rows may go.
        var vouchable: [Int64] = []

        /// `removed` messages left: clients with nothing waiting leave the turns.
        mutating func removed(_ removed: Int) {
            guard removed > 0 else { return }
            count -= removed
            clients.removeAll { client in
                guard handed[client]?.isEmpty != false else { return false }
                handed[client] = nil
                return true
            }
        }
    }

    let capacity: Int
    /// How long a handed message is this process's before any worker may take it back.
    let leaseSeconds: Int
    /// The worker's circuits: which receivers are open now.
    let circuits: ReceiverCircuits?
    private let state = Mutex(State())

    init(capacity: Int, leaseSeconds: Int, circuits: ReceiverCircuits? = nil) {
        self.capacity = capacity
        self.leaseSeconds = leaseSeconds
        self.circuits = circuits
    }

    /// Room for up to `count` messages; how many were granted.
    func reserve(_ count: Int) -> Int {
        state.withLock { state in
            guard !state.closed else { return 0 }
            let granted = max(0, min(count, capacity - state.reserved - state.count))
            state.reserved += granted
            return granted
        }
    }

    /// Clients with three quarters of the room or more waiting (their receiver is slow or hangs):
    /// their new messages are not handed, so the room left serves the other clients.
    func crowdedClients() -> Set<String> {
        state.withLock { state in
            let share = max(1, capacity * 3 / 4)
            return Set(state.clients.filter { (state.handed[$0]?.count ?? 0) >= share })
        }
    }

    /// Receivers the worker holds open after failures in a row, with how long what is due for
    /// them is parked: a new message for one is written parked, as its aggregate's head, instead
    /// of handed over only to be parked by a statement of its own (one a purchase while sales go
    /// on); the probe's success makes it due with the rest. Read from the circuits themselves, so
    /// a writer never sees a receiver open that has closed.
    func openReceivers() -> [ReceiverCircuits.Receiver: Double] { circuits?.parked() ?? [:] }

    /// A writer's transaction that wrote messages parked for `receivers` ended (committed, or its
    /// outcome is unknown): each that closed since it read them open has its release run again,
    /// since the one its close ran may have come before those rows were committed.
    func wroteParked(for receivers: Set<ReceiverCircuits.Receiver>) {
        guard let circuits else { return }
        for receiver in receivers where !circuits.isOpen(receiver) { circuits.markUnsettled(receiver) }
    }

    /// Hands over what a committed transaction wrote handed (its leases counted from `written`,
    /// taken before the statement that wrote them), and gives back the rest of its reservation
    /// (`reserved`, what it was granted). What the worker, stopped meanwhile, will not send is
    /// returned, for the writer to give back to the database.
    @discardableResult
    func hand(
        _ claimed: [OutboxRepository.Claimed], reserved: Int, written: ContinuousClock.Instant = .now
    ) -> [OutboxRepository.Claimed] {
        let (waiter, refused) = state.withLock {
            state -> (CheckedContinuation<Void, Never>?, [OutboxRepository.Claimed]) in
            state.reserved -= reserved
            guard !state.closed else { return (nil, claimed) }
            for event in claimed {
                if let batch = event.handedIn { state.batches[batch, default: (0, written)].unsettled += 1 }
                if state.handed[event.clientID] == nil { state.clients.append(event.clientID) }
                state.handed[event.clientID, default: HandedQueue()].append(.init(event: event, at: written))
            }
            state.count += claimed.count
            guard !claimed.isEmpty else { return (nil, []) }
            state.fresh = true
            defer { state.waiter = nil }
            return (state.waiter, [])
        }
        waiter?.resume()
        return refused
    }

    /// Up to `limit` handed messages of clients `admits` lets send one more (it is asked before
    /// each, and counts what it admits), the clients in turns and each one's oldest first; the rest
    /// wait for a slot of their client. The worker takes after every send while up to `capacity`
    /// messages may wait, so a take costs what it hands out and the clients it asks, not what waits.
    func take(limit: Int, admits: (String) -> Bool) -> [OutboxRepository.Claimed] {
        state.withLock { state in
            state.fresh = false
            var taken: [OutboxRepository.Claimed] = [], served: Set<String> = []
            var asking = state.clients
            while taken.count < limit, !asking.isEmpty {
                // One each a turn; a client refused, or with nothing left, is not asked again.
                asking.removeAll { client in
                    guard taken.count < limit, admits(client), let entry = state.handed[client]?.popOldest() else {
                        return true
                    }
                    taken.append(entry.event)
                    served.insert(client)
                    return state.handed[client]?.isEmpty != false
                }
            }
            // Those served go to the back: the next take, with few slots, starts with the others.
            if !served.isEmpty {
                state.clients = state.clients.filter { !served.contains($0) } + state.clients.filter(served.contains)
            }
            state.removed(taken.count)
            return taken
        }
    }

    /// Handed messages settled: delivered, or back in the pending state (that statement committed).
    /// A batch whose every message is settled becomes vouchable. Messages not handed are ignored.
    func settled(_ events: [OutboxRepository.Claimed]) {
        state.withLock { state in
            for event in events {
                guard let batch = event.handedIn, var entry = state.batches[batch] else { continue }
                entry.unsettled -= 1
                if entry.unsettled > 0 {
                    state.batches[batch] = entry
                } else {
                    state.batches[batch] = nil
                    state.vouchable.append(batch)
                }
            }
        }
    }

    /// The handed batches whose every message is settled, to be vouched for (their rows deleted);
    /// `vouchLater` gives back those whose statement failed. A batch written longer than its lease
    /// ago with messages still unsettled (what settled them did not commit) is forgotten: its
    /// lease ran out, and any worker puts what it holds in flight back in the pending state.
    func takeVouchable(now: ContinuousClock.Instant = .now) -> [Int64] {
        let lease = Duration.seconds(leaseSeconds)
        return state.withLock { state in
            state.batches = state.batches.filter { now - $0.value.written < lease }
            defer { state.vouchable = [] }
            return state.vouchable
        }
    }

    /// Vouchable batches whose rows could not be deleted: tried with the next ones.
    func vouchLater(_ batches: [Int64]) {
        state.withLock { $0.vouchable.append(contentsOf: batches) }
    }

    /// How many batches wait to be vouched for.
    var vouchableCount: Int { state.withLock { $0.vouchable.count } }

    /// Everything still handed, and no room granted from now on (the worker stopped).
    func close() -> [OutboxRepository.Claimed] {
        state.withLock { state in
            state.closed = true
            let all = state.clients.flatMap { state.handed[$0]?.removeAll() ?? [] }.map(\.event)
            state.removed(all.count)
            return all
        }
    }

    /// Whether a handed message of `clientID` waits for a slot.
    func holds(_ clientID: String) -> Bool {
        state.withLock { state in state.handed[clientID]?.isEmpty == false }
    }

    /// Handed messages that waited longer than `age` for a slot (a receiver that hangs holds its
    /// client's): given back to the database before their lease runs out under them.
    func takeWaiting(longerThan age: Duration) -> [OutboxRepository.Claimed] {
        let cutoff = ContinuousClock.now - age
        return state.withLock { state in
            var stale: [OutboxRepository.Claimed] = []
            // Each client's are handed in time order and taken out in it: a look at each one's oldest.
            for client in state.clients {
                while let oldest = state.handed[client]?.oldest, oldest.at < cutoff {
                    stale.append(oldest.event)
                    _ = state.handed[client]?.popOldest()
                }
            }
            state.removed(stale.count)
            return stale
        }
    }

    /// Returns once something was handed since the last `take` (at once when it already was). One
    /// waiter at a time: the worker's loop.
    func handed() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    // Cancelled before it could wait: the cancellation handler found no waiter to wake.
                    if state.fresh || Task.isCancelled { return true }
                    state.waiter?.resume()
                    state.waiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }?.resume()
        }
    }
}
