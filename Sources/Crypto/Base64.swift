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
        let padded = compact.utf8.count % 4 == 0 ? compact : compact + String(repeating: "=", count: 4 - compact.utf8.count % 4)
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
        guard text.utf8.count % 4 != 1 else { return nil }
        var standard = [UInt8]()
        standard.reserveCapacity(text.utf8.count + 3)
        for character in text.utf8 {
            switch character {
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            case UInt8(ascii: "+"), UInt8(ascii: "/"): return nil
            default:
                guard isStandardAlphabet(character) else { return nil }
                standard.append(character)
            }
        }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(standard))
    }

    private static func isStandardAlphabet(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z")) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z"))
            || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "+") || c == UInt8(ascii: "/")
    }
}
