import Synchronization

/// Group commit for the worker's successes: what finished sending while the last batch was being
/// recorded is recorded together, in one transaction (its heads moved on, one commit), so the
/// outbox records deliveries as fast as a receiver takes them instead of a commit each. A send's
/// slot is held until its delivery is recorded: a message is never claimed again after it was
/// answered yet before it is marked.
final class DeliveredBatcher: Sendable {
    private typealias Waiter = (event: OutboxRepository.Claimed, continuation: CheckedContinuation<Void, any Error>)
    private struct Waiting {
        var queue: [Waiter] = []
        var running = false
    }

    let outbox: OutboxRepository
    private let waiting = Mutex(Waiting())

    init(outbox: OutboxRepository) { self.outbox = outbox }

    /// Returns once `event` is recorded delivered (or throws what recording it threw).
    func delivered(_ event: OutboxRepository.Claimed) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let start = waiting.withLock { waiting -> Bool in
                waiting.queue.append((event, continuation))
                guard !waiting.running else { return false }
                waiting.running = true
                return true
            }
            if start { Task { await self.drain() } }
        }
    }

    private func drain() async {
        while true {
            let batch = waiting.withLock { waiting -> [Waiter] in
                guard !waiting.queue.isEmpty else {
                    waiting.running = false
                    return []
                }
                defer { waiting.queue.removeAll(keepingCapacity: true) }
                return waiting.queue
            }
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
