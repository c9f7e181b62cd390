/// A first-in, first-out queue in a ring of optional slots that doubles when full. A slot is
/// emptied the moment its element is taken, so the queue never keeps what it handed out: a job
/// taken from it, and everything that job captured (a password, a request body, a key's tables),
/// lives only as long as whoever took it holds it. Not thread-safe; its owner locks.
package struct JobRing<Element> {
    private var slots: [Element?]
    /// Index of the oldest element, when there is one.
    private var head = 0
    package private(set) var count = 0

    package init(capacity: Int = 16) {
        slots = Array(repeating: nil, count: max(1, capacity))
    }

    package var isEmpty: Bool { count == 0 }

    package mutating func append(_ element: Element) {
        if count == slots.count { grow() }
        slots[(head + count) % slots.count] = element
        count += 1
    }

    /// The oldest element, its slot left empty; nil when there is none.
    package mutating func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = slots[head].take()
        head = (head + 1) % slots.count
        count -= 1
        return element
    }

    /// Twice the slots, the elements moved to the front in order.
    private mutating func grow() {
        var larger = [Element?](repeating: nil, count: slots.count * 2)
        for offset in 0..<count { larger[offset] = slots[(head + offset) % slots.count].take() }
        slots = larger
        head = 0
    }
}
