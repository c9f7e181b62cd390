public import Foundation

/// Reads a JSON document in place, for the hot paths where `JSONDecoder` shows in profiles: no
/// Codable machinery, no dictionary per object, nothing copied until a value is asked for.
///
/// One pass validates the whole document and hands the members of the top-level object to the
/// caller as it goes; each value arrives as a small token (a string's or number's byte range, a
/// nested container's range) that the caller turns into a Swift value only if it wants it:
///
///     try JSONReader.withDocument(data, grammar: .jsonDecoder) { reader throws(JSONReaderError) in
///         let top = try reader.readDocument { field throws(JSONReaderError) in
///             if try names.index(of: field.key, in: reader) == 0 { name = try reader.string(field.value) }
///         }
///         guard case .object = top else { throw .typeMismatch(expected: "object", found: top) }
///     }
///
/// The reader and its tokens are only valid inside `withDocument`'s closure: they point into the bytes.
public struct JSONReader {
    public enum Grammar: Sendable, Equatable {
        /// RFC 8259 exactly: every value is checked as it is scanned, read or not; no trailing
        /// commas, no byte order mark.
        case rfc8259
        /// What Foundation's `JSONDecoder` accepts, so that a hand-written decoder can replace one
        /// without changing which documents pass: trailing commas in objects and arrays and a UTF-8
        /// byte order mark are accepted, and a value nobody reads is checked only for shape (a
        /// skipped number is any run of digits, `.`, `e`, `+`, `-`; a skipped string's escapes and
        /// control characters are not looked at). A value that is read, and every key of an
        /// object whose fields are read, is checked as strictly as under `rfc8259`: JSONDecoder
        /// checks them when it decodes them.
        case jsonDecoder
    }

    /// A scalar, or a nested container already validated and skipped.
    public enum Value: Sendable, Equatable {
        case string(StringToken)
        case number(NumberToken)
        case bool(Bool)
        case null
        case object(Container)
        case array(Container)

        /// For messages: the JSON type's name.
        package var typeName: String {
            switch self {
            case .string: "string"
            case .number: "number"
            case .bool: "boolean"
            case .null: "null"
            case .object: "object"
            case .array: "array"
            }
        }
    }

    /// A string's bytes between its quotes, with what the scan saw in them.
    public struct StringToken: Sendable, Equatable {
        let start: Int
        let end: Int
        let flags: UInt8

        static let escaped: UInt8 = 1
        static let nonASCII: UInt8 = 2
        static let control: UInt8 = 4

        /// Printable ASCII without escapes: its bytes are its value.
        var isPlain: Bool { flags == 0 }
    }

    /// A number's text, not yet converted.
    public struct NumberToken: Sendable, Equatable {
        let start: Int
        let end: Int
    }

    /// An object or array, from its opening bracket to just after its closing one.
    public struct Container: Sendable, Equatable {
        let start: Int
        let end: Int
    }

    /// One member of an object, in document order (duplicates included: the caller decides).
    public struct Field: Sendable {
        public let key: StringToken
        public let value: Value
    }

    /// Containers nest at most this deep, as in JSONDecoder.
    package static let maximumDepth = 512

    let bytes: UnsafeRawBufferPointer
    let count: Int
    public let grammar: Grammar

    private init(bytes: UnsafeRawBufferPointer, grammar: Grammar) {
        self.bytes = bytes
        count = bytes.count
        self.grammar = grammar
    }

    /// Runs `body` with a reader over `data`. Under `.jsonDecoder`, a UTF-8 byte order mark is
    /// skipped and a document JSONDecoder would read as UTF-16 or UTF-32 is refused with
    /// `.unsupportedEncoding`, for the caller to read again after `transcodedToUTF8`.
    public static func withDocument<R>(
        _ data: Data, grammar: Grammar = .rfc8259,
        _ body: (JSONReader) throws(JSONReaderError) -> R
    ) throws(JSONReaderError) -> R {
        let result = data.withUnsafeBytes { buffer -> Result<R, JSONReaderError> in
            var start = 0
            if grammar == .jsonDecoder {
                guard let bomLength = utf8ByteOrderMarkLength(buffer) else {
                    return .failure(JSONReaderError(.unsupportedEncoding, "the document is UTF-16 or UTF-32"))
                }
                start = bomLength
            }
            let reader = JSONReader(bytes: UnsafeRawBufferPointer(rebasing: buffer[start...]), grammar: grammar)
            return Result { () throws(JSONReaderError) in try body(reader) }
        }
        return try result.get()
    }

    /// JSONDecoder's encoding detection (`wideEncoding`): the length of a UTF-8 byte order mark
    /// (0 or 3), or nil when the first bytes say UTF-16 or UTF-32.
    static func utf8ByteOrderMarkLength(_ buffer: UnsafeRawBufferPointer) -> Int? {
        let b0: UInt8? = buffer.count > 0 ? buffer[0] : nil, b1: UInt8? = buffer.count > 1 ? buffer[1] : nil
        let b2: UInt8? = buffer.count > 2 ? buffer[2] : nil, b3: UInt8? = buffer.count > 3 ? buffer[3] : nil
        guard wideEncoding(b0, b1, b2, b3) == nil else { return nil }
        return (b0, b1, b2) == (0xEF, 0xBB, 0xBF) ? 3 : 0
    }

    // MARK: - Reading

    /// Reads the whole document: one value, only whitespace after it. When the value is an
    /// object, `field` sees each of its members in order as the scan passes them (and every key
    /// is checked, as JSONDecoder checks the keys of an object it decodes). Returns the value.
    @discardableResult
    public func readDocument(
        _ field: (Field) throws(JSONReaderError) -> Void = { _ in }
    ) throws(JSONReaderError) -> Value {
        var i = 0
        skipWhitespace(&i)
        let value: Value
        if i < count, bytes[i] == UInt8(ascii: "{") {
            value = try scanObject(&i, depth: 0, reporting: true, field: field)
        } else {
            value = try scanValue(&i, depth: 0)
        }
        skipWhitespace(&i)
        guard i == count else { throw unexpected(at: i, "after the top-level value") }
        return value
    }

    /// The members of a nested object (validated already when it was skipped), keys checked.
    package func forEachField(
        of object: Container, _ field: (Field) throws(JSONReaderError) -> Void
    ) throws(JSONReaderError) {
        var i = object.start
        _ = try scanObject(&i, depth: 0, reporting: true, field: field)
    }

    /// The elements of a nested array (validated already when it was skipped).
    package func forEachElement(
        of array: Container, _ element: (Value) throws(JSONReaderError) -> Void
    ) throws(JSONReaderError) {
        var i = array.start
        _ = try scanArray(&i, depth: 0, reporting: true, element: element)
    }

    // MARK: - Scanning

    @inline(__always)
    private func skipWhitespace(_ i: inout Int) {
        while i < count {
            switch bytes[i] {
            case 0x20, 0x0A, 0x0D, 0x09: i &+= 1
            default: return
            }
        }
    }

    private func scanValue(_ i: inout Int, depth: Int) throws(JSONReaderError) -> Value {
        skipWhitespace(&i)
        guard i < count else { throw endOfDocument(at: i) }
        switch bytes[i] {
        case UInt8(ascii: "\""): return .string(try scanString(&i))
        case UInt8(ascii: "{"): return try scanObject(&i, depth: depth, reporting: false, field: { _ in })
        case UInt8(ascii: "["): return try scanArray(&i, depth: depth, reporting: false, element: { _ in })
        case UInt8(ascii: "t"): try scanLiteral(&i, "true"); return .bool(true)
        case UInt8(ascii: "f"): try scanLiteral(&i, "false"); return .bool(false)
        case UInt8(ascii: "n"): try scanLiteral(&i, "null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try scanNumber(&i))
        default: throw unexpected(at: i, "where a value should start")
        }
    }

    /// `depth` counts the containers around this one (0 for the top level); `field` is called
    /// when `reporting`, else the object is only validated and skipped.
    private func scanObject(
        _ i: inout Int, depth: Int, reporting: Bool,
        field: (Field) throws(JSONReaderError) -> Void
    ) throws(JSONReaderError) -> Value {
        let start = i
        guard depth < Self.maximumDepth else {
            throw JSONReaderError(.tooDeep, "more than \(Self.maximumDepth) nested objects and arrays", at: i)
        }
        i &+= 1
        skipWhitespace(&i)
        if i < count, bytes[i] == UInt8(ascii: "}") {
            i &+= 1
            return .object(Container(start: start, end: i))
        }
        while true {
            guard i < count else { throw endOfDocument(at: i) }
            guard bytes[i] == UInt8(ascii: "\"") else { throw unexpected(at: i, "where a key should start") }
            let key = try scanString(&i)
            // JSONDecoder turns every key of an object it decodes into a String, and fails on one it cannot.
            if reporting, grammar == .jsonDecoder, !key.isPlain { _ = try string(key) }
            skipWhitespace(&i)
            guard i < count else { throw endOfDocument(at: i) }
            guard bytes[i] == UInt8(ascii: ":") else { throw unexpected(at: i, "after a key") }
            i &+= 1
            let value = try scanValue(&i, depth: depth &+ 1)
            if reporting { try field(Field(key: key, value: value)) }
            if try closesAfterMember(&i, closing: UInt8(ascii: "}"), "in an object") {
                return .object(Container(start: start, end: i))
            }
        }
    }

    private func scanArray(
        _ i: inout Int, depth: Int, reporting: Bool,
        element: (Value) throws(JSONReaderError) -> Void
    ) throws(JSONReaderError) -> Value {
        let start = i
        guard depth < Self.maximumDepth else {
            throw JSONReaderError(.tooDeep, "more than \(Self.maximumDepth) nested objects and arrays", at: i)
        }
        i &+= 1
        skipWhitespace(&i)
        if i < count, bytes[i] == UInt8(ascii: "]") {
            i &+= 1
            return .array(Container(start: start, end: i))
        }
        while true {
            let value = try scanValue(&i, depth: depth &+ 1)
            if reporting { try element(value) }
            if try closesAfterMember(&i, closing: UInt8(ascii: "]"), "in an array") {
                return .array(Container(start: start, end: i))
            }
        }
    }

    /// After an object's member or an array's element: a comma (followed by the next one, or, in
    /// JSONDecoder's grammar, a trailing comma before the close) or the closing byte. True, with
    /// `i` past the close, when the container ended.
    @inline(__always)
    private func closesAfterMember(_ i: inout Int, closing: UInt8, _ place: String) throws(JSONReaderError) -> Bool {
        skipWhitespace(&i)
        guard i < count else { throw endOfDocument(at: i) }
        switch bytes[i] {
        case UInt8(ascii: ","):
            i &+= 1
            skipWhitespace(&i)
            guard grammar == .jsonDecoder, i < count, bytes[i] == closing else { return false }
            i &+= 1
            return true
        case closing:
            i &+= 1
            return true
        default:
            throw unexpected(at: i, place)
        }
    }

    private func scanLiteral(_ i: inout Int, _ literal: StaticString) throws(JSONReaderError) {
        let length = literal.utf8CodeUnitCount
        guard count - i >= length else { throw endOfDocument(at: count) }
        for offset in 1..<length where bytes[i &+ offset] != literal.utf8Start[offset] {
            throw unexpected(at: i &+ offset, "in \(literal)")
        }
        i &+= length
    }

    // MARK: - Errors

    func unexpected(at offset: Int, _ context: String) -> JSONReaderError {
        let byte = bytes[offset]
        let shown =
            byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        return JSONReaderError(.syntax, "unexpected \(shown) \(context)", at: offset)
    }

    func endOfDocument(at offset: Int) -> JSONReaderError {
        JSONReaderError(.syntax, "the document ends early", at: offset)
    }
}
