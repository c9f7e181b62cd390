public import Foundation

/// A JSON document of no fixed shape, for what the store plugins read loosely: evidence a client
/// forwards in several layouts, JSON nested in a string, a store record kept as it was sent.
///
/// `init(parsing:)` reads with `JSONReader` and takes what the plugins always took: any valid
/// JSON (trailing commas and a byte order mark allowed, UTF-16 and UTF-32 transcoded), every
/// value checked, the last of duplicate keys kept. A number keeps its text, so nothing is
/// rounded until a caller asks for a type. The accessors answer nil for another type, never throw.
package indirect enum JSONValue: Sendable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    /// The number as written (valid by RFC 8259).
    case number(String)
    case bool(Bool)
    case null

    /// Nil when `data` is not JSON.
    package init?(parsing data: Data) {
        do throws(JSONReaderError) {
            self = try JSONReader.withDocument(data, grammar: .jsonDecoder) { reader throws(JSONReaderError) in
                try JSONValue(reader.readDocument(), in: reader)
            }
        } catch  where error.code == .unsupportedEncoding {
            guard let utf8 = JSONReader.transcodedToUTF8(data) else { return nil }
            self.init(parsing: utf8)
        } catch {
            return nil
        }
    }

    /// The whole tree under `value`; reading every value checks it, so the document is valid throughout.
    private init(_ value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        switch value {
        case .string(let token): self = .string(try reader.string(token))
        case .number(let token): self = .number(try reader.text(token))
        case .bool(let bool): self = .bool(bool)
        case .null: self = .null
        case .object(let container):
            var members: [String: JSONValue] = [:]
            try reader.forEachField(of: container) { field throws(JSONReaderError) in
                members[try reader.string(field.key)] = try JSONValue(field.value, in: reader)
            }
            self = .object(members)
        case .array(let container):
            var elements: [JSONValue] = []
            try reader.forEachElement(of: container) { element throws(JSONReaderError) in
                elements.append(try JSONValue(element, in: reader))
            }
            self = .array(elements)
        }
    }

    // MARK: - Views

    package var object: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    package var array: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    package var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    package var isNull: Bool { self == .null }

    /// A member of an object; nil when absent or when this is not an object.
    package subscript(key: String) -> JSONValue? { object?[key] }

    /// A number or a boolean as a whole number: a fraction is cut toward zero, `true` is 1 (how
    /// the stores' loosely typed fields were always read). Nil for other types, or out of range.
    package var truncatedInteger: Int64? {
        switch self {
        case .number(let text):
            if let whole = Int64(text) { return whole }
            guard let double = Double(text), double.isFinite, double.magnitude < 0x1p63 else { return nil }
            return Int64(double.rounded(.towardZero))
        case .bool(let bool): return bool ? 1 : 0
        default: return nil
        }
    }

    /// A number or a boolean as a Double (`true` is 1).
    package var double: Double? {
        switch self {
        case .number(let text): Double(text)
        case .bool(let bool): bool ? 1 : 0
        default: nil
        }
    }

    /// A number's or boolean's text as Foundation's `NSNumber.stringValue` gives it: an integer's
    /// digits, a fraction as the nearest Double prints (`1.0`, `2.5`), `true` as 1.
    package var numberText: String? {
        switch self {
        case .number(let text):
            if let whole = Int64(text) { return String(whole) }
            return Double(text).map { "\($0)" }
        case .bool(let bool): return bool ? "1" : "0"
        default: return nil
        }
    }
}
