import Foundation

/// Turning tokens into Swift values, by JSONDecoder's rules: a value is checked when it is read
/// (a string's escapes and UTF-8, a number's grammar), and numbers convert as JSONDecoder
/// converts them (`1.0` and `1e2` are integers, `1.5` is not; a double that rounds to zero from
/// non-zero digits, or to infinity, is refused).
extension JSONReader {
    // MARK: - Values, as `decodeIfPresent` reads them: null is nil, another type is a mismatch

    public func string(_ value: Value) throws(JSONReaderError) -> String? {
        switch value {
        case .null: return nil
        case .string(let token): return try string(token)
        default: throw .typeMismatch(expected: "string", found: value)
        }
    }

    public func bool(_ value: Value) throws(JSONReaderError) -> Bool? {
        switch value {
        case .null: return nil
        case .bool(let bool): return bool
        default: throw .typeMismatch(expected: "boolean", found: value)
        }
    }

    public func int64(_ value: Value) throws(JSONReaderError) -> Int64? {
        switch value {
        case .null: return nil
        case .number(let token): return try int64(token)
        default: throw .typeMismatch(expected: "number", found: value)
        }
    }

    public func int(_ value: Value) throws(JSONReaderError) -> Int? {
        guard let whole = try int64(value) else { return nil }
        guard let int = Int(exactly: whole) else {
            throw JSONReaderError(.notRepresentable, "\(whole) does not fit an Int")
        }
        return int
    }

    public func double(_ value: Value) throws(JSONReaderError) -> Double? {
        switch value {
        case .null: return nil
        case .number(let token): return try double(token)
        default: throw .typeMismatch(expected: "number", found: value)
        }
    }

    // MARK: - Strings

    /// The string's value. Plain ASCII is taken as it is; otherwise the bytes must be UTF-8
    /// without raw control characters, and escapes must be valid (a high surrogate followed by a
    /// low one, never either alone).
    public func string(_ token: StringToken) throws(JSONReaderError) -> String {
        let raw = UnsafeRawBufferPointer(rebasing: bytes[token.start..<token.end])
        if token.isPlain { return String(decoding: raw, as: UTF8.self) }
        guard token.flags & StringToken.control == 0 else {
            throw JSONReaderError(.invalidString, "a raw control character in a string", at: token.start)
        }
        if token.flags == StringToken.nonASCII {
            guard let string = String(validating: raw, as: UTF8.self) else { throw notUTF8(token) }
            return string
        }
        // Escapes are ASCII, so the unescaped bytes are UTF-8 exactly when every run between
        // escapes is (what JSONDecoder checks); the escapes add whole scalars.
        var output: [UInt8] = []
        output.reserveCapacity(raw.count)
        var j = 0
        while j < raw.count {
            let byte = raw[j]
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                j &+= 1
                continue
            }
            let escape = raw[j &+ 1]  // the scan guaranteed the escaped character
            j &+= 2
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                let unit = try hexUnit(raw, at: j, token)
                j &+= 4
                let scalar: Unicode.Scalar?
                if UTF16.isLeadSurrogate(unit) {
                    guard j &+ 6 <= raw.count, raw[j] == UInt8(ascii: "\\"), raw[j &+ 1] == UInt8(ascii: "u") else {
                        throw JSONReaderError(
                            .invalidString, "a high surrogate without a low one", at: token.start &+ j)
                    }
                    let trail = try hexUnit(raw, at: j &+ 2, token)
                    guard UTF16.isTrailSurrogate(trail) else {
                        throw JSONReaderError(
                            .invalidString, "a high surrogate without a low one", at: token.start &+ j)
                    }
                    j &+= 6
                    scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(trail) - 0xDC00))
                } else {
                    scalar = Unicode.Scalar(unit)  // nil for a lone low surrogate
                }
                guard let scalar else {
                    throw JSONReaderError(.invalidString, "a lone low surrogate", at: token.start &+ j)
                }
                output.append(contentsOf: scalar.utf8)
            default:
                throw JSONReaderError(.invalidString, "an invalid escape", at: token.start &+ j &- 1)
            }
        }
        guard let string = String(validating: output, as: UTF8.self) else { throw notUTF8(token) }
        return string
    }

    private func hexUnit(
        _ raw: UnsafeRawBufferPointer, at offset: Int, _ token: StringToken
    ) throws(JSONReaderError) -> UInt16 {
        guard offset &+ 4 <= raw.count else {
            throw JSONReaderError(.invalidString, "\\u needs four hex digits", at: token.start &+ offset)
        }
        var unit: UInt16 = 0
        for k in offset..<(offset &+ 4) {
            let byte = raw[k]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte &- UInt8(ascii: "A") &+ 10
            default: throw JSONReaderError(.invalidString, "\\u needs four hex digits", at: token.start &+ k)
            }
            unit = unit << 4 | UInt16(digit)
        }
        return unit
    }

    private func notUTF8(_ token: StringToken) -> JSONReaderError {
        JSONReaderError(.invalidString, "a string that is not UTF-8", at: token.start)
    }

    // MARK: - Numbers

    /// The number's text, checked against RFC 8259's grammar.
    public func text(_ token: NumberToken) throws(JSONReaderError) -> String {
        try checkGrammar(token)
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[token.start..<token.end]), as: UTF8.self)
    }

    /// As JSONDecoder decodes an `Int64`: an integer's digits exactly; otherwise the nearest
    /// double, if it is a whole number inside Int64's range (so `1.0`, `1e2`, `-0.0` and even
    /// `1e-400` are integers, `1.5` is not). Beyond 2^53 JSONDecoder re-reads such a number as a
    /// Decimal, with truncations of its own; that rare case (a fraction or an exponent on a
    /// number that large) is handed to JSONDecoder itself rather than imitated.
    public func int64(_ token: NumberToken) throws(JSONReaderError) -> Int64 {
        try checkGrammar(token)
        var j = token.start
        let negative = bytes[j] == UInt8(ascii: "-")
        if negative { j &+= 1 }
        var value: Int64 = 0
        var whole = true
        while j < token.end {
            let digit = bytes[j] &- UInt8(ascii: "0")
            guard digit < 10 else {
                whole = false
                break
            }
            let (shifted, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowB) =
                negative
                ? shifted.subtractingReportingOverflow(Int64(digit)) : shifted.addingReportingOverflow(Int64(digit))
            guard !overflowA, !overflowB else {
                // Too many digits for the quick path: `1234567890123456789012e-10` is still an
                // integer to JSONDecoder. (Digits alone that overflow are refused below.)
                whole = false
                break
            }
            value = next
            j &+= 1
        }
        if whole { return value }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[token.start..<token.end]), as: UTF8.self)
        guard let double = Double(text), let integer = Int64(exactly: double) else { throw outOfRange(token, "Int64") }
        if double.magnitude < 0x1p53 { return integer }
        guard let decoded = try? JSONDecoder().decode(Int64.self, from: Data(text.utf8)) else {
            throw outOfRange(token, "Int64")
        }
        return decoded
    }

    /// As JSONDecoder decodes a `Double`: the nearest double, refused if that is infinite, or if
    /// it is zero and JSONDecoder's underflow check takes the digits for non-zero ones.
    public func double(_ token: NumberToken) throws(JSONReaderError) -> Double {
        let text = try text(token)
        guard let double = Double(text), double.isFinite else { throw outOfRange(token, "Double") }
        if double == 0, !isTrueZeroByJSONDecoder(token) { throw outOfRange(token, "Double") }
        return double
    }

    /// JSONDecoder's check that a number which parsed to zero was written as zero: it looks for
    /// a non-zero digit before the exponent, four bytes at a time from the front, but the last
    /// one to three bytes from the back. So an exponent in those last bytes can be read as a
    /// non-zero digit: `0e5`, `0E3` and `0.00e12` are refused, `0e10` and `0.0e1` accepted.
    /// Imitated exactly, so that the same documents pass.
    private func isTrueZeroByJSONDecoder(_ token: NumberToken) -> Bool {
        func check(_ offset: Int) -> Bool? {
            switch bytes[offset] {
            case UInt8(ascii: "1")...UInt8(ascii: "9"): false
            case UInt8(ascii: "e"), UInt8(ascii: "E"): true
            default: nil
            }
        }
        var start = token.start
        while token.end - start >= 4 {
            for offset in start..<(start &+ 4) {
                if let verdict = check(offset) { return verdict }
            }
            start &+= 4
        }
        for offset in stride(from: token.end &- 1, through: start, by: -1) {
            if let verdict = check(offset) { return verdict }
        }
        return true
    }

    private func checkGrammar(_ token: NumberToken) throws(JSONReaderError) {
        guard grammar == .jsonDecoder else { return }  // the scan matched the grammar already
        guard numberGrammarEnd(from: token.start, limit: token.end) == token.end else {
            throw JSONReaderError(.invalidNumber, "not a number by RFC 8259", at: token.start)
        }
    }

    private func outOfRange(_ token: NumberToken, _ type: String) -> JSONReaderError {
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[token.start..<token.end]), as: UTF8.self)
        return JSONReaderError(.notRepresentable, "\(text) is not representable as \(type)", at: token.start)
    }
}
