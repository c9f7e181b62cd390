public import Foundation
public import ReceiptCore
import TestSupport

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
        guard !body.contains(0), let top = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed])
        else { return .undecided }
        if top is NSNull { return .refused(.missingFields, "field '' must not be null") }
        guard top is NSDictionary else { return .refused(.invalidField, "request body must be a JSON object") }
        guard let members = TopLevelMembers.split(Array(body)) else { return .undecided }
        var object: [String: Any] = [:]
        for (key, value) in members where object[key] == nil { object[key] = value }
        var values: [String?] = []
        for field in fields {
            switch object[field.name] {
            case nil where field.required: return .refused(.missingFields, "missing field '\(field.name)'")
            case is NSNull where field.required:
                return .refused(.missingFields, "field '\(field.name)' must not be null")
            case nil, is NSNull: values.append(nil)
            case let string as String where field.kind == .string: values.append(string)
            case let number as NSNumber where field.kind == .bool && isBoolean(number):
                values.append(number.boolValue ? "true" : "false")
            default:
                return .refused(
                    .invalidField,
                    "field '\(field.name)' has the wrong type (expected \(field.kind == .string ? "string" : "boolean"))"
                )
            }
        }
        return .decoded(values)
    }

    /// JSONSerialization gives `true` and `1` alike as NSNumber; a boolean's type code is `c`.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}
