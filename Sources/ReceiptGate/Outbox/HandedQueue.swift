/// One client's handed-over messages, oldest first: handed onto the back, taken from the front,
/// each in constant time on average and without copying what stays (two stacks, the front one
/// kept reversed).
struct HandedQueue {
    struct Entry {
        let event: OutboxRepository.Claimed
        /// When the transaction that wrote it took its lease's start.
        let at: ContinuousClock.Instant
    }

    private var front: [Entry] = []
    private var back: [Entry] = []

    var count: Int { front.count + back.count }
    var isEmpty: Bool { front.isEmpty && back.isEmpty }
    var oldest: Entry? { front.last ?? back.first }

    mutating func append(_ entry: Entry) { back.append(entry) }

    mutating func popOldest() -> Entry? {
        if front.isEmpty {
            front = back.reversed()
            back.removeAll(keepingCapacity: true)
        }
        return front.popLast()
    }

    /// Everything, oldest first, leaving it empty.
    mutating func removeAll() -> [Entry] {
        defer {
            front = []
            back = []
        }
        return front.reversed() + back
    }
}
