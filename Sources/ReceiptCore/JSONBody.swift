public import Foundation

/// Decodes a JSON request body; a failure names the field, with the shared code for it:
/// `MISSING_FIELDS` for an absent or null required field, `INVALID_FIELD` for a wrong type or
/// value, or for a body that is not JSON at all.
public enum JSONBody {
    public struct Problem: Error, Sendable, Equatable {
        public let code: ErrorCode
        public let message: String

        public init(code: ErrorCode, message: String) {
            self.code = code
            self.message = message
        }
    }

    public static func decode<T: Decodable>(_ type: T.Type, from body: Data) -> Result<T, Problem> {
        guard !body.isEmpty else {
            return .failure(Problem(code: .missingFields, message: "request body is empty; a JSON object is expected"))
        }
        do {
            return .success(try JSONDecoder().decode(type, from: body))
        } catch let error as DecodingError {
            return .failure(describe(error))
        } catch {
            return .failure(Problem(code: .invalidField, message: "request body is not valid JSON"))
        }
    }

    static func describe(_ error: DecodingError) -> Problem {
        func path(_ codingPath: [any CodingKey], _ last: (any CodingKey)? = nil) -> String {
            let keys = codingPath + (last.map { [$0] } ?? [])
            return keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
                .joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return Problem(code: .missingFields, message: "missing field '\(path(context.codingPath, key))'")
        case .valueNotFound(_, let context):
            return Problem(code: .missingFields, message: "field '\(path(context.codingPath))' must not be null")
        case .typeMismatch(let expected, let context):
            let field = path(context.codingPath)
            return Problem(
                code: .invalidField,
                message: field.isEmpty
                    ? "request body must be a JSON object"
                    : "field '\(field)' has the wrong type (expected \(jsonTypeName(expected)))")
        case .dataCorrupted(let context):
            let field = path(context.codingPath)
            if field.isEmpty { return Problem(code: .invalidField, message: "request body is not valid JSON") }
            return Problem(code: .invalidField, message: "field '\(field)' is invalid: \(context.debugDescription)")
        @unknown default:
            return Problem(code: .invalidField, message: "request body could not be read")
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
