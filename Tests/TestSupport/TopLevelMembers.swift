import Foundation

/// The members of a top-level object that JSONSerialization has accepted, in document order,
/// each key and value parsed by JSONSerialization on its own, so that a reference can keep the
/// first of duplicate keys as JSONDecoder does (JSONSerialization keeps the last). Only strings
/// and brackets need tracking to find where a member ends: the document is known to be valid.
/// Nil where JSONSerialization's answer cannot be trusted to be JSONDecoder's.
package enum TopLevelMembers {
    package static func split(_ bytes: [UInt8]) -> [(key: String, value: Any)]? {
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        func skipSpace() { while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 } }
        func parse(_ range: Range<Int>) -> Any? {
            // JSONSerialization drops U+FEFF where a piece of a string starts (NSString's byte
            // order mark rule), JSONDecoder keeps it: a member holding one gives nil.
            let text = String(decoding: bytes[range], as: UTF8.self)
            guard !text.contains("\u{FEFF}"), !text.lowercased().contains("\\ufeff") else { return nil }
            return try? JSONSerialization.jsonObject(with: Data(bytes[range]), options: [.fragmentsAllowed])
        }
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        var members: [(key: String, value: Any)] = []
        while true {
            skipSpace()
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "}") { return members }
            let keyStart = index
            index = valueEnd(bytes, from: index)
            guard let key = parse(keyStart..<index) as? String else { return nil }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipSpace()
            let valueStart = index
            index = valueEnd(bytes, from: index)
            guard let value = parse(valueStart..<index) else { return nil }
            members.append((key, value))
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: ",") { index += 1 }
        }
    }

    /// Just past the value that starts at `start`: a string, a container, or a scalar's run of bytes.
    private static func valueEnd(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start, depth = 0, inString = false
        while index < bytes.count {
            let byte = bytes[index]
            if inString {
                index += byte == UInt8(ascii: "\\") ? 2 : 1
                if byte == UInt8(ascii: "\"") {
                    inString = false
                    if depth == 0 { return index }
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if depth == 0 { return index }  // the enclosing object closes: a scalar ended
                depth -= 1
                if depth == 0 { return index + 1 }
            case UInt8(ascii: ","), UInt8(ascii: ":"), 0x20, 0x09, 0x0A, 0x0D:
                if depth == 0 { return index }
            default: break
            }
            index += 1
        }
        return index
    }
}
