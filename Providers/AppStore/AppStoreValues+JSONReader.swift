import JSON

// Reading App Store values from `JSONReader` tokens by the rules their `init(from:)` follows
// under JSONDecoder; null is nil, as `decodeIfPresent` makes it.

extension AppStoreDate {
    /// Whole milliseconds as JSONDecoder decodes an Int64; failing that, a double rounded down,
    /// inside ±9e15.
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        switch value {
        case .null:
            return nil
        case .number(let token):
            if let whole = try? reader.int64(token) {
                self.init(milliseconds: whole)
                return
            }
            let double = try reader.double(token)
            guard double.isFinite, abs(double) < 9e15 else {
                throw JSONReaderError(.notRepresentable, "timestamp out of range")
            }
            self.init(milliseconds: Int64(double.rounded(.down)))
        default:
            throw .typeMismatch(expected: "number", found: value)
        }
    }
}

extension AppStoreRawValue where RawValue == String {
    /// Any string, known or not (Apple adds values).
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        guard let raw = try reader.string(value) else { return nil }
        self.init(rawValue: raw)
    }
}

extension AppStoreRawValue where RawValue == Int {
    /// Any integer, known or not, as JSONDecoder decodes an Int.
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        guard let raw = try reader.int(value) else { return nil }
        self.init(rawValue: raw)
    }
}
