public import Foundation
public import JSON

extension JSONBody {
    /// The known fields of a flat JSON object body, read with `JSONReader` in one pass instead of
    /// JSONDecoder. Values stay tokens until asked for; the first of duplicate keys counts, as in
    /// JSONDecoder. Each accessor refuses exactly as `JSONBody.decode` refuses a Decodable with
    /// the same field: absent or null required field `MISSING_FIELDS`, wrong type `INVALID_FIELD`,
    /// a string that is not valid JSON "request body is not valid JSON".
    public struct Fields {
        let reader: JSONReader
        let names: JSONFieldNames
        let values: [JSONReader.Value?]

        /// A required string: absent is "missing field", null "must not be null".
        public func requiredString(_ key: some CodingKey) throws(Problem) -> String {
            guard let value = try value(key) else {
                throw Problem(code: .missingFields, message: "missing field '\(key.stringValue)'")
            }
            guard value != .null else {
                throw Problem(code: .missingFields, message: "field '\(key.stringValue)' must not be null")
            }
            return try read(key, expected: "string") { () throws(JSONReaderError) -> String in
                guard case .string(let token) = value else { throw .typeMismatch(expected: "string", found: value) }
                return try reader.string(token)
            }
        }

        /// An optional string: absent and null are nil.
        public func string(_ key: some CodingKey) throws(Problem) -> String? {
            guard let value = try value(key) else { return nil }
            return try read(key, expected: "string") { () throws(JSONReaderError) in try reader.string(value) }
        }

        /// An optional boolean: absent and null are nil.
        public func bool(_ key: some CodingKey) throws(Problem) -> Bool? {
            guard let value = try value(key) else { return nil }
            return try read(key, expected: "boolean") { () throws(JSONReaderError) in try reader.bool(value) }
        }

        private func value(_ key: some CodingKey) throws(Problem) -> JSONReader.Value? {
            guard let index = names.index(of: key.stringValue) else {
                preconditionFailure("\(key.stringValue) is not among the fields read")
            }
            return values[index]
        }

        /// A wrong type names the field; a string JSONDecoder cannot turn into a String is its
        /// "not valid JSON" (it reports those for the whole document).
        private func read<T>(
            _ key: some CodingKey, expected: String, _ body: () throws(JSONReaderError) -> T
        ) throws(Problem) -> T {
            do {
                return try body()
            } catch  where error.code == .typeMismatch {
                throw Problem(
                    code: .invalidField, message: "field '\(key.stringValue)' has the wrong type (expected \(expected))"
                )
            } catch {
                throw Problem(code: .invalidField, message: "request body is not valid JSON")
            }
        }
    }

    /// Decodes a flat object body by hand: `read` takes the fields it needs from `Fields` in the
    /// order a Decodable would declare them (JSONDecoder reports the first failing field in that
    /// order). The result, refusals and messages are those `decode(_:from:)` gives for such a
    /// Decodable; a UTF-16 or UTF-32 body is transcoded first, as JSONDecoder transcodes it.
    public static func decode<T>(
        from body: Data, fields names: JSONFieldNames, _ read: (Fields) throws(Problem) -> T
    ) -> Result<T, Problem> {
        guard !body.isEmpty else {
            return .failure(Problem(code: .missingFields, message: "request body is empty; a JSON object is expected"))
        }
        do throws(JSONReaderError) {
            return try JSONReader.withDocument(body, grammar: .jsonDecoder) {
                reader throws(JSONReaderError) -> Result<T, Problem> in
                var values = [JSONReader.Value?](repeating: nil, count: names.count)
                let top = try reader.readDocument { field throws(JSONReaderError) in
                    if let index = try names.index(of: field.key, in: reader), values[index] == nil {
                        values[index] = field.value
                    }
                }
                switch top {
                case .object: break
                // What `describe` makes of JSONDecoder's valueNotFound at the top level.
                case .null: return .failure(Problem(code: .missingFields, message: "field '' must not be null"))
                default: return .failure(Problem(code: .invalidField, message: "request body must be a JSON object"))
                }
                do throws(Problem) {
                    return .success(try read(Fields(reader: reader, names: names, values: values)))
                } catch {
                    return .failure(error)
                }
            }
        } catch  where error.code == .unsupportedEncoding {
            guard let utf8 = JSONReader.transcodedToUTF8(body) else {
                return .failure(Problem(code: .invalidField, message: "request body is not valid JSON"))
            }
            return decode(from: utf8, fields: names, read)
        } catch {
            return .failure(Problem(code: .invalidField, message: "request body is not valid JSON"))
        }
    }
}
