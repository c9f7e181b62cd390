import Postgres
import Synchronization

/// Group commit for the worker's successes: what finished sending while the last batch was being
/// recorded is recorded together, in one transaction (its heads moved on, one commit), so the
/// outbox records deliveries as fast as a receiver takes them instead of a commit each. A message
/// answered but not yet marked is still under the lease it was sent with, so no claim takes it
/// again meanwhile; its sender's slot is free already (a slot held through the commit capped one
/// client's deliveries below its purchases).
final class DeliveredBatcher: Sendable {
    /// Messages answered together (one POST of a batch), recorded in the same batch.
    private typealias Waiter = (events: [OutboxRepository.Claimed], continuation: CheckedContinuation<Void, any Error>)
    private struct Waiting {
        var queue: [Waiter] = []
        /// The messages in `queue`.
        var queued = 0
        var running = false
        /// In the batch being recorded now.
        var recording = 0
        /// Waiting for everything queued to be recorded (a stopping worker).
        var settling: [CheckedContinuation<Void, Never>] = []
    }

    /// Records a batch delivered (`OutboxRepository.markDelivered`).
    let record: @Sendable ([OutboxRepository.Claimed]) async throws -> Void
    /// At most this many answered messages wait for their mark with their slots freed; past it (a
    /// mark that waits on the database) a sender keeps its slot until its mark is recorded, so a
    /// stalled commit stops the sending instead of piling up answers whose leases run out.
    let freedAtMost: Int
    /// The pauses before each new try of a batch whose recording failed (a connection lost, a
    /// failover): a mark never recorded means its message is sent again once its lease runs out.
    let retryPauses: [Duration]
    private let waiting = Mutex(Waiting())

    init(
        outbox: OutboxRepository, freedAtMost: Int = 64,
        retryPauses: [Duration] = [.milliseconds(100), .milliseconds(400), .milliseconds(1600), .seconds(5)],
        record: (@Sendable ([OutboxRepository.Claimed]) async throws -> Void)? = nil
    ) {
        self.record = record ?? { try await outbox.markDelivered($0) }
        self.freedAtMost = freedAtMost
        self.retryPauses = retryPauses
    }

    /// Returns once `event` is recorded delivered (or throws what recording it threw). `queued`
    /// runs once it is queued (from then on `settled()` waits for it), unless `freedAtMost` wait
    /// already: then nothing runs it, and its sender's slot stays held until this returns.
    func delivered(_ event: OutboxRepository.Claimed, queued: () -> Void = {}) async throws {
        try await delivered([event], queued: queued)
    }

    /// `delivered` for messages one answer acknowledged together (a batched webhook POST).
    func delivered(_ events: [OutboxRepository.Claimed], queued: () -> Void = {}) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let (start, free) = waiting.withLock { waiting -> (Bool, Bool) in
                let free = waiting.queued + waiting.recording + events.count <= freedAtMost
                waiting.queue.append((events, continuation))
                waiting.queued += events.count
                guard !waiting.running else { return (false, free) }
                waiting.running = true
                return (true, free)
            }
            if free { queued() }
            if start { Task { await self.drain() } }
        }
    }

    /// Returns once nothing queued is left to record.
    func settled() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = waiting.withLock { waiting -> Bool in
                guard waiting.running else { return true }
                waiting.settling.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func drain() async {
        while true {
            let (batch, settled) = waiting.withLock { waiting -> ([Waiter], [CheckedContinuation<Void, Never>]) in
                guard !waiting.queue.isEmpty else {
                    waiting.running = false
                    waiting.recording = 0
                    defer { waiting.settling = [] }
                    return ([], waiting.settling)
                }
                defer {
                    waiting.queue.removeAll(keepingCapacity: true)
                    waiting.queued = 0
                }
                waiting.recording = waiting.queued
                return (waiting.queue, [])
            }
            settled.forEach { $0.resume() }
            guard !batch.isEmpty else { return }
            do {
                try await recordTryingAgain(batch.flatMap(\.events))
                batch.forEach { $0.continuation.resume() }
            } catch {
                batch.forEach { $0.continuation.resume(throwing: error) }
            }
        }
    }

    /// Records `events`, trying again after each of `retryPauses` while it fails in a way worth
    /// another try (`PostgresError.isRetryable`). A mark applies only under the lease its message
    /// was sent with, so a late try changes nothing another sender did since; meanwhile the
    /// senders still waiting keep their slots (`freedAtMost`).
    private func recordTryingAgain(_ events: [OutboxRepository.Claimed]) async throws {
        var pauses = retryPauses[...]
        while true {
            do {
                return try await record(events)
            } catch let error as PostgresError where error.isRetryable && !pauses.isEmpty {
                try? await Task.sleep(for: pauses.removeFirst())
            }
        }
    }
}
