public import Foundation

/// Writes JSON into a byte buffer, append-only, for answers on the hot path. Strings are
/// escaped byte for byte as `JSONEncoder` escapes them with `.withoutEscapingSlashes`: `"` and
/// `\` with a backslash, `\b \f \n \r \t` by name, other control characters as `\u00xx`
/// (lower-case hex), everything else (`/`, DEL, U+2028, any non-ASCII) as its raw UTF-8.
/// Numbers are written as `JSONEncoder` writes integers. There is no indentation, and keys are
/// written in the order given: a caller matching `.sortedKeys` writes them in UTF-8 order.
///
///     var writer = JSONWriter()
///     writer.beginObject()
///     writer.key("id"); writer.number(7)
///     writer.key("name"); writer.string(name)
///     writer.endObject()
///     let body = writer.data
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// A value was written at this level: the next key or element needs a comma first.
    private var needsComma = false
    /// A key was just written: its value follows without a comma.
    private var afterKey = false

    public init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    public var data: Data { Data(bytes) }

    // MARK: - Containers

    package mutating func beginObject() {
        startValue()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    package mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        startValue()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    public mutating func key(_ name: String) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    // MARK: - Scalars

    public mutating func string(_ value: String) {
        startValue()
        appendQuoted(value)
        needsComma = true
    }

    /// `null` for nil, as JSONEncoder writes an absent optional it is asked to encode.
    public mutating func string(_ value: String?) {
        guard let value else { return null() }
        string(value)
    }

    public mutating func number(_ value: Int64) {
        startValue()
        let start = bytes.count
        var magnitude = value.magnitude
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // Swapped in place: reversing the slice `bytes[start...]` copied it first.
        var low = start, high = bytes.count - 1
        while low < high {
            bytes.swapAt(low, high)
            low += 1
            high -= 1
        }
        needsComma = true
    }

    public mutating func number(_ value: Int64?) {
        guard let value else { return null() }
        number(value)
    }

    public mutating func number(_ value: Int) { number(Int64(value)) }

    public mutating func number(_ value: Int?) {
        guard let value else { return null() }
        number(Int64(value))
    }

    public mutating func bool(_ value: Bool) {
        startValue()
        appendASCII(value ? "true" : "false")
        needsComma = true
    }

    public mutating func null() {
        startValue()
        appendASCII("null")
        needsComma = true
    }

    // MARK: - Bytes

    /// A value after a key follows its colon; an array element after another needs a comma.
    private mutating func startValue() {
        if afterKey {
            afterKey = false
        } else if needsComma {
            bytes.append(UInt8(ascii: ","))
        }
    }

    private mutating func appendASCII(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") &+ value : UInt8(ascii: "a") &+ value &- 10
    }

    private mutating func appendQuoted(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0, index = 0
            while index < utf8.count {
                // Eight bytes at a time while none needs an escape.
                if index &+ 8 <= utf8.count,
                    !UnsafeRawBufferPointer(utf8).loadUnaligned(fromByteOffset: index, as: UInt64.self)
                        .hasQuoteBackslashOrControlByte
                {
                    index &+= 8
                    continue
                }
                let byte = utf8[index]
                index &+= 1
                let escape: UInt8
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): escape = byte
                case 0x08: escape = UInt8(ascii: "b")
                case 0x0C: escape = UInt8(ascii: "f")
                case 0x0A: escape = UInt8(ascii: "n")
                case 0x0D: escape = UInt8(ascii: "r")
                case 0x09: escape = UInt8(ascii: "t")
                case 0x00..<0x20: escape = UInt8(ascii: "u")
                default: continue
                }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<(index &- 1)]))
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(escape)
                if escape == UInt8(ascii: "u") {
                    appendASCII("00")
                    bytes.append(Self.hexDigit(byte >> 4))
                    bytes.append(Self.hexDigit(byte & 0x0F))
                }
                runStart = index
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
