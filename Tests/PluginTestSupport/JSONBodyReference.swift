public import Foundation
public import ReceiptCore

/// What `JSONBody` must make of a flat object body, worked out from `JSONSerialization`'s parse
/// of the same raw bytes, so that a hand-written body reader is checked against a parser it
/// shares no code with: the fields in the order the reader reads them, absent or null optional
/// fields nil, the first absent, null or wrongly typed field refused with JSONBody's code and
/// message.
///
/// JSONSerialization keeps the last of duplicate keys and JSONDecoder the first, so the members
/// are taken one by one: the top-level object is split at its members (easy once JSONSerialization
/// has accepted the whole document) and each key and value parsed by JSONSerialization on its own.
/// Where JSONSerialization refuses the document the answer is `undecided`: the reader's lenient
/// grammar then decides, and the JSON module's tests check that grammar against JSONDecoder.
public enum JSONBodyReference {
    public enum Kind: Sendable { case string, bool }

    public enum Outcome: Equatable, Sendable, CustomStringConvertible {
        /// Each field's value (a string, or `true` / `false`), nil when absent or null, in field order.
        case decoded([String?])
        case refused(ErrorCode, String)
        case undecided

        public var description: String {
            switch self {
            case .decoded(let values): values.map { $0?.debugDescription ?? "nil" }.joined(separator: ",")
            case .refused(let code, let message): "\(code.rawValue): \(message)"
            case .undecided: "undecided"
            }
        }
    }

    public static func outcome(_ body: Data, fields: [(name: String, kind: Kind, required: Bool)]) -> Outcome {
        if body.isEmpty { return .refused(.missingFields, "request body is empty; a JSON object is expected") }
        // A NUL byte is never valid UTF-8 JSON: such a body is UTF-16 or UTF-32, which the split below cannot read.
        guard !body.contains(0), let top = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) else { return .undecided }
        if top is NSNull { return .refused(.missingFields, "field '' must not be null") }
        guard top is NSDictionary else { return .refused(.invalidField, "request body must be a JSON object") }
        guard let members = TopLevelMembers.split(Array(body)) else { return .undecided }
        var object: [String: Any] = [:]
        for (key, value) in members where object[key] == nil { object[key] = value }
        var values: [String?] = []
        for field in fields {
            switch object[field.name] {
            case nil where field.required: return .refused(.missingFields, "missing field '\(field.name)'")
            case is NSNull where field.required: return .refused(.missingFields, "field '\(field.name)' must not be null")
            case nil, is NSNull: values.append(nil)
            case let string as String where field.kind == .string: values.append(string)
            case let number as NSNumber where field.kind == .bool && isBoolean(number): values.append(number.boolValue ? "true" : "false")
            default:
                return .refused(.invalidField, "field '\(field.name)' has the wrong type (expected \(field.kind == .string ? "string" : "boolean"))")
            }
        }
        return .decoded(values)
    }

    /// JSONSerialization gives `true` and `1` alike as NSNumber; a boolean's type code is `c`.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}

/// The members of a top-level object that JSONSerialization has accepted, in document order,
/// each key and value parsed by JSONSerialization on its own. Only strings and brackets need
/// tracking to find where a member ends: the document is known to be valid.
enum TopLevelMembers {
    static func split(_ bytes: [UInt8]) -> [(key: String, value: Any)]? {
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        func skipSpace() { while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 } }
        func parse(_ range: Range<Int>) -> Any? {
            // JSONSerialization drops U+FEFF where a piece of a string starts (NSString's byte
            // order mark rule), JSONDecoder keeps it: a string holding one is left undecided.
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
