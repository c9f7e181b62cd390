import Synchronization

/// Group commit for the worker's successes: what finished sending while the last batch was being
/// recorded is recorded together, in one transaction (its heads moved on, one commit), so the
/// outbox records deliveries as fast as a receiver takes them instead of a commit each. A message
/// answered but not yet marked is still under the lease it was sent with, so no claim takes it
/// again meanwhile; its sender's slot is free already (a slot held through the commit capped one
/// client's deliveries below its purchases).
final class DeliveredBatcher: Sendable {
    private typealias Waiter = (event: OutboxRepository.Claimed, continuation: CheckedContinuation<Void, any Error>)
    private struct Waiting {
        var queue: [Waiter] = []
        var running = false
        /// Waiting for everything queued to be recorded (a stopping worker).
        var settling: [CheckedContinuation<Void, Never>] = []
    }

    let outbox: OutboxRepository
    private let waiting = Mutex(Waiting())

    init(outbox: OutboxRepository) { self.outbox = outbox }

    /// Returns once `event` is recorded delivered (or throws what recording it threw). `queued`
    /// runs once it is queued: from then on `settled()` waits for it.
    func delivered(_ event: OutboxRepository.Claimed, queued: () -> Void = {}) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let start = waiting.withLock { waiting -> Bool in
                waiting.queue.append((event, continuation))
                guard !waiting.running else { return false }
                waiting.running = true
                return true
            }
            queued()
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
                    defer { waiting.settling = [] }
                    return ([], waiting.settling)
                }
                defer { waiting.queue.removeAll(keepingCapacity: true) }
                return (waiting.queue, [])
            }
            settled.forEach { $0.resume() }
            guard !batch.isEmpty else { return }
            do {
                try await outbox.markDelivered(batch.map(\.event))
                batch.forEach { $0.continuation.resume() }
            } catch {
                batch.forEach { $0.continuation.resume(throwing: error) }
            }
        }
    }
}
