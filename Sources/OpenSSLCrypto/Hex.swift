public import Foundation

/// Lower-case hexadecimal, as used in signatures and digests on the wire.
public enum Hex {
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digit(byte >> 4))
            out.append(digit(byte & 0x0f))
        }
        return String(decoding: out, as: UTF8.self)
    }

    @inline(__always)
    private static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    /// Whether `text` is exactly `byteCount` bytes of hex, checked without decoding it.
    package static func isHex(_ text: String, byteCount: Int) -> Bool {
        text.utf8.count == byteCount * 2 && text.utf8.allSatisfy { nibble($0) != nil }
    }

    /// Decodes upper- or lower-case hex; nil for anything else (odd length, other characters).
    public static func decode(_ text: String) -> Data? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for character in text.utf8 {
            guard let nibble = nibble(character) else { return nil }
            if let h = high {
                bytes.append(h << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return high == nil ? Data(bytes) : nil
    }

    /// The value of one hex digit, either case; nil for any other byte.
    @inline(__always)
    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
