// The token scanners of `JSONReader`: strings and numbers, the byte loops most documents spend
// their time in.
extension JSONReader {
    /// From the opening quote to just after the closing one. The scan checks only the shape
    /// JSONDecoder's scanner checks (an escape has its character, `\u` has four more bytes none of
    /// which is a quote); under `.rfc8259` a string that is not plain is then checked fully.
    func scanString(_ i: inout Int) throws(JSONReaderError) -> StringToken {
        let start = i &+ 1
        var j = start
        var flags: UInt8 = 0
        while j < count {
            // Eight bytes at a time while none is a quote, a backslash or a control character.
            if j &+ 8 <= count {
                let word = bytes.loadUnaligned(fromByteOffset: j, as: UInt64.self)
                if !word.hasQuoteBackslashOrControlByte {
                    if word & 0x8080_8080_8080_8080 != 0 { flags |= StringToken.nonASCII }
                    j &+= 8
                    continue
                }
            }
            let byte = bytes[j]
            if byte == UInt8(ascii: "\"") {
                let token = StringToken(start: start, end: j, flags: flags)
                if grammar == .rfc8259, flags != 0 { _ = try string(token) }
                i = j &+ 1
                return token
            }
            if byte == UInt8(ascii: "\\") {
                flags |= StringToken.escaped
                guard j &+ 1 < count else { throw endOfDocument(at: count) }
                if bytes[j &+ 1] == UInt8(ascii: "u") {
                    guard count - (j &+ 2) >= 4 else { throw endOfDocument(at: count) }
                    for k in (j &+ 2)..<(j &+ 6) where bytes[k] == UInt8(ascii: "\"") {
                        throw JSONReaderError(.invalidString, "\\u must be followed by four hex digits", at: k)
                    }
                    j &+= 6
                } else {
                    j &+= 2
                }
                continue
            }
            if byte < 0x20 {
                flags |= StringToken.control
            } else if byte >= 0x80 {
                flags |= StringToken.nonASCII
            }
            j &+= 1
        }
        throw endOfDocument(at: count)
    }

    /// Under `.jsonDecoder`, the run of number characters JSONDecoder's scanner takes (checked
    /// when read); under `.rfc8259`, exactly the grammar.
    func scanNumber(_ i: inout Int) throws(JSONReaderError) -> NumberToken {
        let start = i
        if grammar == .jsonDecoder {
            var j = i &+ 1
            scan: while j < count {
                switch bytes[j] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"),
                    UInt8(ascii: "+"), UInt8(ascii: "-"):
                    j &+= 1
                default:
                    break scan
                }
            }
            i = j
            return NumberToken(start: start, end: j)
        }
        let end = numberGrammarEnd(from: start)
        guard end > start else { throw JSONReaderError(.invalidNumber, "not a number", at: start) }
        i = end
        return NumberToken(start: start, end: end)
    }

    /// Where RFC 8259's number grammar, matched from `start`, ends; `start` if it does not match.
    func numberGrammarEnd(from start: Int, limit: Int? = nil) -> Int {
        let limit = limit ?? count
        var j = start
        func digits() -> Int {
            let first = j
            while j < limit, bytes[j] &- UInt8(ascii: "0") < 10 { j &+= 1 }
            return j &- first
        }
        if j < limit, bytes[j] == UInt8(ascii: "-") { j &+= 1 }
        guard j < limit else { return start }
        if bytes[j] == UInt8(ascii: "0") {
            j &+= 1
        } else {
            guard digits() > 0 else { return start }
        }
        if j < limit, bytes[j] == UInt8(ascii: ".") {
            j &+= 1
            guard digits() > 0 else { return start }
        }
        if j < limit, bytes[j] | 0x20 == UInt8(ascii: "e") {
            j &+= 1
            if j < limit, bytes[j] == UInt8(ascii: "+") || bytes[j] == UInt8(ascii: "-") { j &+= 1 }
            guard digits() > 0 else { return start }
        }
        return j
    }
}

extension UInt64 {
    /// Whether any of these eight bytes is `"`, `\` or below 0x20: what stops a string's fast
    /// scan (reading) or fast copy (writing). Exact: the classic has-zero-byte and has-less-than
    /// tests have no false positives taken as a whole.
    @inline(__always)
    var hasQuoteBackslashOrControlByte: Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, high: UInt64 = 0x8080_8080_8080_8080
        let quotes = self ^ (ones &* 0x22), backslashes = self ^ (ones &* 0x5C)
        let quote = (quotes &- ones) & ~quotes
        let backslash = (backslashes &- ones) & ~backslashes
        let control = (self &- ones &* 0x20) & ~self
        return (quote | backslash | control) & high != 0
    }
}
