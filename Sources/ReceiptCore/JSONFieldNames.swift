/// The field names a hand-written decoder knows, matched against keys the way JSONDecoder
/// matches them: by Swift `String` equality, which is canonical equivalence (`"\u00e9"` and
/// `"e\u0301"` are one key, and so are `"K"` and the Kelvin sign). A plain ASCII key against
/// ASCII names, the usual case, is settled by comparing bytes, which is the same answer.
public struct JSONFieldNames: Sendable {
    public let names: [String]
    private let utf8: [[UInt8]]
    /// Indexes of the ASCII names, by byte length.
    private let asciiByLength: [[Int]]
    /// A non-ASCII name may equal an ASCII key without equal bytes; such tables take the slow path.
    private let allASCII: Bool

    public init(_ names: [String]) {
        self.names = names
        utf8 = names.map { Array($0.utf8) }
        allASCII = utf8.allSatisfy { $0.allSatisfy { $0 < 0x80 } }
        var byLength = [[Int]](repeating: [], count: (utf8.map(\.count).max() ?? 0) + 1)
        for (index, name) in utf8.enumerated() where name.allSatisfy({ $0 < 0x80 }) { byLength[name.count].append(index) }
        asciiByLength = byLength
    }

    public var count: Int { names.count }

    /// The index of the name `key` spells, or nil. Checks the key (as JSONDecoder does for every
    /// key of an object it decodes): a key that is not a valid string throws.
    public func index(of key: JSONReader.StringToken, in reader: JSONReader) throws(JSONReaderError) -> Int? {
        if key.isPlain && allASCII {
            let length = key.end - key.start
            guard length < asciiByLength.count else { return nil }
            candidates: for index in asciiByLength[length] {
                let name = utf8[index]
                for offset in 0..<length where reader.bytes[key.start &+ offset] != name[offset] { continue candidates }
                return index
            }
            return nil
        }
        return index(of: try reader.string(key))
    }

    public func index(of name: String) -> Int? { names.firstIndex(of: name) }
}
