import Foundation
import Synchronization

/// Checked destinations remembered for a short while: a webhook goes to the same game server's
/// name thousands of times a minute, and each send asking DNS again would cost a lookup (and a
/// resolver thread) per message. Only what was checked is remembered, so a connection still goes
/// only to addresses that passed the check; a name's new answer is used once the entry expires.
/// Refusals are not remembered: the next send asks again. An address literal's check is remembered
/// the same way (its answer never changes; remembering it saves parsing the URL each send).
final class ResolvedNames: Sendable {
    private struct Entry {
        let pin: String?
        let until: ContinuousClock.Instant
    }

    private let lifetime: Duration
    private let capacity: Int
    private let entries = Mutex([Key: Entry]())

    init(lifetime: Duration = .seconds(30), capacity: Int = 256) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The pin remembered for the URL's destination under `policy`; nil when none is (or it expired).
    func pin(for url: String, policy: DestinationPolicy, now: ContinuousClock.Instant = .now) -> String?? {
        guard let key = Self.key(url, policy) else { return nil }
        return entries.withLock { entries -> String?? in
            guard let entry = entries[key] else { return nil }
            guard entry.until > now else {
                entries[key] = nil
                return nil
            }
            return .some(entry.pin)
        }
    }

    func remember(_ pin: String?, for url: String, policy: DestinationPolicy, now: ContinuousClock.Instant = .now) {
        guard let key = Self.key(url, policy) else { return }
        entries.withLock { entries in
            // Bounded: a client's handful of receivers fit; past the bound, start again.
            if entries.count >= capacity && entries[key] == nil { entries.removeAll() }
            entries[key] = Entry(pin: pin, until: now + lifetime)
        }
    }

    /// What the pin depends on: the policy, and the URL's scheme and authority (its host and
    /// port), read as text up to the path: the same text is the same host and port to the parser
    /// that checked it, and reading it costs a scan where parsing cost a `URLComponents`. Letters
    /// are folded as ASCII only: two spellings that differ past ASCII are two entries, each checked.
    private struct Key: Hashable {
        let policy: DestinationPolicy
        /// Bytes, not a `String`: a `String` compares canonically equivalent spellings equal.
        let origin: [UInt8]
    }

    private static func key(_ url: String, _ policy: DestinationPolicy) -> Key? {
        let bytes = url.utf8
        var origin: [UInt8] = []
        origin.reserveCapacity(64)
        var index = bytes.startIndex
        func take(while wanted: (UInt8) -> Bool) -> Int {
            var taken = 0
            while index != bytes.endIndex, wanted(bytes[index]) {
                let byte = bytes[index]
                origin.append(byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte)
                index = bytes.index(after: index)
                taken += 1
            }
            return taken
        }
        _ = take { $0 != UInt8(ascii: ":") }
        guard take(while: { $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: "/") }) == 3,
            origin.suffix(3).elementsEqual("://".utf8)
        else { return nil }
        guard take(while: { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }) > 0
        else { return nil }
        return Key(policy: policy, origin: origin)
    }
}
