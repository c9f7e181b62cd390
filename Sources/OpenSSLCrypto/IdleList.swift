import Foundation

/// Objects kept for reuse by one user at a time (OpenSSL contexts, scratch numbers): taken from the
/// list, or made when it is empty, and given back afterwards. Beyond `limit` idle ones, what is
/// given back is discarded, so a burst does not pin memory.
final class IdleList<Element>: @unchecked Sendable {
    private let lock = NSLock()  // guards items
    private var items: [Element] = []
    private let limit: Int
    private let discard: (Element) -> Void

    init(limit: Int, discard: @escaping (Element) -> Void) {
        self.limit = limit
        self.discard = discard
    }

    deinit { discardAll() }

    func take(orMake make: () -> Element?) -> Element? {
        if let item = lock.withLock({ items.popLast() }) { return item }
        return make()
    }

    func giveBack(_ item: Element) {
        let kept = lock.withLock { () -> Bool in
            guard items.count < limit else { return false }
            items.append(item)
            return true
        }
        if !kept { discard(item) }
    }

    /// Discards every idle object now (before what they depend on is freed).
    func discardAll() {
        let all = lock.withLock { () -> [Element] in
            defer { items = [] }
            return items
        }
        all.forEach(discard)
    }
}
