public import Foundation

extension HTTPResponse {
    /// A JSON body with `Content-Type: application/json`.
    public static func json(_ value: some Encodable, status: Int = 200, encoder: JSONEncoder = .receiptGate) -> HTTPResponse {
        do {
            return HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: try encoder.encode(value))
        } catch {
            return HTTPResponse(status: 500, headers: ["Content-Type": "application/json"],
                                body: Data(#"{"error":"INTERNAL_ERROR","message":"response could not be encoded"}"#.utf8))
        }
    }
}

extension JSONEncoder {
    /// Stable output: sorted keys, no escaped slashes.
    public static var receiptGate: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension HTTPRequest {
    /// Decodes the body as JSON. Any failure is a 400 whose message names the field:
    /// `MISSING_FIELDS` for an absent required field, `INVALID_FIELD` for a wrong type or value,
    /// or for a body that is not JSON at all.
    public func decodeJSON<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        guard !body.isEmpty else {
            throw HTTPError(status: 400, code: "MISSING_FIELDS", message: "request body is empty; a JSON object is expected")
        }
        do {
            return try decoder.decode(type, from: body)
        } catch let error as DecodingError {
            throw Self.describe(error)
        } catch {
            throw HTTPError(status: 400, code: "INVALID_FIELD", message: "request body is not valid JSON")
        }
    }

    static func describe(_ error: DecodingError) -> HTTPError {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = codingPath + (last.map { [$0] } ?? [])
            return keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
                .joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return HTTPError(status: 400, code: "MISSING_FIELDS", message: "missing field '\(path(context.codingPath, key))'")
        case .valueNotFound(_, let context):
            return HTTPError(status: 400, code: "MISSING_FIELDS", message: "field '\(path(context.codingPath))' must not be null")
        case .typeMismatch(let expected, let context):
            let field = path(context.codingPath)
            return HTTPError(status: 400, code: "INVALID_FIELD",
                             message: field.isEmpty ? "request body must be a JSON object"
                                                    : "field '\(field)' has the wrong type (expected \(Self.jsonTypeName(expected)))")
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty {
                return HTTPError(status: 400, code: "INVALID_FIELD", message: "request body is not valid JSON")
            }
            return HTTPError(status: 400, code: "INVALID_FIELD", message: "field '\(field)' is invalid: \(context.debugDescription)")
        @unknown default:
            return HTTPError(status: 400, code: "INVALID_FIELD", message: "request body could not be read")
        }
    }

    private static func jsonTypeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "string"
        case is Bool.Type: return "boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is Double.Type: return "number"
        default:
            let name = String(describing: type)
            return name.hasPrefix("Array") ? "array" : name.hasPrefix("Dictionary") ? "object" : name
        }
    }
}
