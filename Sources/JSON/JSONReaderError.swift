/// Why `JSONReader` refused a document or a value. `code` is stable; `offset` is the byte the
/// reader stopped at, counted from the document's first byte after any byte order mark.
public struct JSONReaderError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Not JSON: an unexpected byte, the document ending early, or more after the value.
        package static let syntax = Code(rawValue: "JSON_SYNTAX")
        /// Objects and arrays nest deeper than `JSONReader.maximumDepth`.
        package static let tooDeep = Code(rawValue: "JSON_TOO_DEEP")
        /// A string with a raw control character, a bad escape, a lone surrogate or bytes that are not UTF-8.
        package static let invalidString = Code(rawValue: "JSON_INVALID_STRING")
        /// A number outside RFC 8259's grammar (a leading zero, a bare `-`, `1.`, `.5`...).
        package static let invalidNumber = Code(rawValue: "JSON_INVALID_NUMBER")
        /// A well-formed number the asked-for type cannot hold (out of range, a fraction for an integer).
        public static let notRepresentable = Code(rawValue: "JSON_NUMBER_NOT_REPRESENTABLE")
        /// A value of another JSON type than the one asked for.
        public static let typeMismatch = Code(rawValue: "JSON_TYPE_MISMATCH")
        /// UTF-16 or UTF-32 (by JSONDecoder's detection rule): read again after `JSONReader.transcodedToUTF8`.
        public static let unsupportedEncoding = Code(rawValue: "JSON_UNSUPPORTED_ENCODING")
    }

    public let code: Code
    public let message: String
    public let offset: Int?

    public init(_ code: Code, _ message: String, at offset: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// A value of another type than `expected` ("string", "number", "boolean", "object", "array").
    public static func typeMismatch(expected: String, found value: JSONReader.Value) -> JSONReaderError {
        let article = value.typeName == "array" || value.typeName == "object" ? "an" : "a"
        return JSONReaderError(.typeMismatch, "expected a \(expected), found \(article) \(value.typeName)")
    }

    public var description: String { offset.map { "\(code): \(message) at byte \($0)" } ?? "\(code): \(message)" }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
}
