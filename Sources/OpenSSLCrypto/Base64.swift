public import Foundation

/// Base64 (RFC 4648 §4) and base64url (§5). Decoding is strict: characters outside the alphabet,
/// whitespace, or a length no encoder produces are rejected.
public enum Base64 {
    public static func encode(_ data: some Sequence<UInt8>) -> String {
        Data(data).base64EncodedString()
    }

    /// Standard alphabet with `=` padding required.
    public static func decode(_ text: String) -> Data? {
        guard text.utf8.count % 4 == 0 else { return nil }
        var sawPadding = 0
        for character in text.utf8 {
            if character == UInt8(ascii: "=") {
                sawPadding += 1
                continue
            }
            guard sawPadding == 0, isStandardAlphabet(character) else { return nil }
        }
        guard sawPadding <= 2 else { return nil }
        return Data(base64Encoded: text)
    }

    /// Like `decode`, but tolerates missing padding and line breaks, as found in PEM bodies and
    /// in receipts pasted by hand.
    public static func decodeLenient(_ text: String) -> Data? {
        let compact = text.filter { !$0.isWhitespace }
        let padded =
            compact.utf8.count % 4 == 0 ? compact : compact + String(repeating: "=", count: 4 - compact.utf8.count % 4)
        return decode(padded)
    }

    /// base64url without padding (as JOSE uses it).
    public static func urlEncode(_ data: some Sequence<UInt8>) -> String {
        var text = encode(data)
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Strict base64url: only `A–Z a–z 0–9 - _`, no padding, no whitespace.
    public static func urlDecode(_ text: String) -> Data? {
        var text = text
        return text.withUTF8 { urlDecode(bytes: $0) }
    }

    public static func urlDecode(bytes: Data) -> Data? {
        bytes.withUnsafeBytes { urlDecode(bytes: $0.bindMemory(to: UInt8.self)) }
    }

    /// Strict base64url over raw bytes. Table-driven: it sits on the hot path of every JWS.
    public static func urlDecode(bytes: UnsafeBufferPointer<UInt8>) -> Data? {
        let count = bytes.count
        guard count % 4 != 1 else { return nil }
        var output = Data(count: count * 3 / 4)
        let valid = output.withUnsafeMutableBytes { raw -> Bool in
            guard let out = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return count == 0 }
            return urlDecodingTable.withUnsafeBufferPointer { table in
                var written = 0, accumulator: UInt32 = 0, bits = 0
                for byte in bytes {
                    let value = table[Int(byte)]
                    guard value != 0xff else { return false }
                    accumulator = accumulator << 6 | UInt32(value)
                    bits += 6
                    if bits >= 8 {
                        bits -= 8
                        out[written] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                        written += 1
                    }
                }
                return true
            }
        }
        return valid ? output : nil
    }

    private static let urlDecodingTable: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (index, character) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    private static func isStandardAlphabet(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z"))
            || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "+") || c == UInt8(ascii: "/")
    }
}
