/// The field names a hand-written decoder knows, matched against keys the way JSONDecoder
/// matches them: by Swift `String` equality, which is canonical equivalence (`"\u00e9"` and
/// `"e\u0301"` are one key, and so are `"K"` and the Kelvin sign). A plain ASCII key against
/// ASCII names, the usual case, is settled by comparing bytes, which is the same answer: one
/// hash of a few bytes, then one comparison.
public struct JSONFieldNames: Sendable {
    public let names: [String]
    /// Every name's UTF-8, end to end; name `i` is `bytes[starts[i]..<starts[i + 1]]`.
    private let bytes: [UInt8]
    private let starts: [Int]
    /// Open addressing by `slot(...)`: a name's index plus one, 0 for an empty slot.
    private let slots: [Int]
    /// A non-ASCII name may equal an ASCII key without equal bytes; such tables take the slow path.
    private let allASCII: Bool

    public init(_ names: [String]) {
        self.names = names
        bytes = names.flatMap { Array($0.utf8) }
        starts = names.reduce(into: [0]) { starts, name in starts.append(starts[starts.count - 1] + name.utf8.count) }
        allASCII = names.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } }
        var capacity = 8
        while capacity < names.count * 4 { capacity *= 2 }
        var slots = [Int](repeating: 0, count: capacity)
        for (index, name) in names.enumerated() where names.firstIndex(of: name) == index {
            var slot = Self.slot(Array(name.utf8)[...], mask: capacity - 1)
            while slots[slot] != 0 { slot = (slot + 1) & (capacity - 1) }
            slots[slot] = index + 1
        }
        self.slots = slots
    }

    public var count: Int { names.count }

    /// The index of the name `key` spells, or nil. Checks the key (as JSONDecoder does for every
    /// key of an object it decodes): a key that is not a valid string throws.
    public func index(of key: JSONReader.StringToken, in reader: JSONReader) throws(JSONReaderError) -> Int? {
        guard key.isPlain && allASCII else { return index(of: try reader.string(key)) }
        let keyBytes = UnsafeRawBufferPointer(rebasing: reader.bytes[key.start..<key.end])
        let mask = slots.count - 1
        var slot = Self.slot(keyBytes, mask: mask)
        while true {
            let entry = slots[slot]
            if entry == 0 { return nil }
            let start = starts[entry - 1], length = starts[entry] - start
            if length == keyBytes.count {
                var equal = true
                for offset in 0..<length where bytes[start &+ offset] != keyBytes[offset] {
                    equal = false
                    break
                }
                if equal { return entry - 1 }
            }
            slot = (slot + 1) & mask
        }
    }

    public func index(of name: String) -> Int? { names.firstIndex(of: name) }

    /// From the length and the first, middle and last bytes: enough to tell field names apart.
    private static func slot<Bytes: Collection<UInt8>>(_ name: Bytes, mask: Int) -> Int where Bytes.Index == Int {
        guard !name.isEmpty else { return 0 }
        let first = name[name.startIndex], middle = name[name.startIndex + name.count / 2],
            last = name[name.endIndex - 1]
        let hash = name.count &* 0x9E37 ^ Int(first) &* 0x2F ^ Int(middle) &* 0x161 ^ Int(last) &* 0x1F3
        return (hash ^ (hash >> 7)) & mask
    }
}
