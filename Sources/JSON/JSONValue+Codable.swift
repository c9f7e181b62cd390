public import Foundation

/// `JSONValue` through `JSONDecoder` and `JSONEncoder`, for documents of no fixed shape inside
/// Codable bodies (a store's record kept as sent). A number keeps its digits when it is an
/// integer; any other number goes through Double, as the coders carry numbers.
extension JSONValue: Codable {
    package init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Booleans before numbers: the decoder refuses to read a number as a Bool, and vice versa.
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let whole = try? container.decode(Int64.self) {
            self = .number(String(whole))
        } else if let double = try? container.decode(Double.self) {
            self = .number("\(double)")
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let elements = try? container.decode([JSONValue].self) {
            self = .array(elements)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .object(let members): try container.encode(members)
        case .array(let elements): try container.encode(elements)
        case .string(let text): try container.encode(text)
        case .bool(let bool): try container.encode(bool)
        case .null: try container.encodeNil()
        case .number(let text):
            if let whole = Int64(text) {
                try container.encode(whole)
            } else if let whole = UInt64(text) {
                try container.encode(whole)
            } else {
                guard let double = Double(text) else {
                    throw EncodingError.invalidValue(
                        text, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "not a number"))
                }
                try container.encode(double)
            }
        }
    }
}
