import Foundation

/// Random JSON text for differential tests of the hand-written readers against JSONDecoder:
/// objects whose members are drawn from a decoder's field names (present, absent, repeated, null,
/// of the wrong type) and from unknown keys with nested values, with the edges that matter
/// (escapes, surrogates, raw UTF-8 and bytes that are not, numbers at the limits of Int64 and
/// Double, grammar JSONDecoder only checks when it reads a value), plus byte-level mutations of
/// such documents. Seeded: a failure names its seed and case, so it can be replayed.
package struct JSONSamples {
    /// What a field holds when it holds the right type.
    package enum Kind: Sendable {
        case string, integer, double, bool
        /// Any value at all (unknown keys, nested containers).
        case any
    }

    private var random: SplitMix64

    /// `RECEIPTGATE_JSON_SEED` (a number) shifts every seed, to explore beyond the committed runs.
    package init(seed: UInt64) {
        random = SplitMix64(seed: seed ^ Self.seedShift)
    }

    static let seedShift = ProcessInfo.processInfo.environment["RECEIPTGATE_JSON_SEED"].flatMap { UInt64($0) } ?? 0

    /// `standard`, times `RECEIPTGATE_JSON_ROUNDS` when set: a long run is an environment variable away.
    package static func rounds(_ standard: Int) -> Int {
        standard * (ProcessInfo.processInfo.environment["RECEIPTGATE_JSON_ROUNDS"].flatMap { Int($0) } ?? 1)
    }

    // MARK: - Documents

    /// A top-level object: members from `fields` (by name and kind) and unknown keys, in random
    /// order, sometimes repeated, sometimes with escaped keys, random whitespace and (rarely) a
    /// trailing comma.
    package mutating func object(fields: [(name: String, kind: Kind)], unknownKeys: [String] = []) -> [UInt8] {
        var members: [[UInt8]] = []
        for _ in 0..<int(0...(fields.count + 4)) {
            if !fields.isEmpty, chance(0.8) {
                let field = fields[int(0...(fields.count - 1))]
                members.append(member(key: key(field.name), value: value(field.kind)))
            } else {
                let name =
                    unknownKeys.isEmpty || chance(0.5)
                    ? randomKeyText() : key(unknownKeys[int(0...(unknownKeys.count - 1))])
                members.append(member(key: name, value: value(.any, depth: 1)))
            }
        }
        var document = whitespace() + Array("{".utf8)
        for (index, member) in members.enumerated() {
            if index > 0 { document += whitespace() + Array(",".utf8) }
            document += member
        }
        if !members.isEmpty, chance(0.03) { document += Array(",".utf8) }
        document += whitespace() + Array("}".utf8) + whitespace()
        return document
    }

    /// A document broken (or not) at the byte level: cut short, a byte replaced, inserted,
    /// deleted or a slice repeated.
    package mutating func mutate(_ document: [UInt8]) -> [UInt8] {
        guard !document.isEmpty else { return interestingByte().map { [$0] } ?? [] }
        var bytes = document
        let at = int(0...(bytes.count - 1))
        switch int(0...5) {
        case 0: bytes = Array(bytes.prefix(at))
        case 1: bytes[at] = interestingByte() ?? UInt8(truncatingIfNeeded: random.next())
        case 2: bytes.insert(interestingByte() ?? UInt8(truncatingIfNeeded: random.next()), at: at)
        case 3: bytes.remove(at: at)
        case 4:
            let end = min(bytes.count, at + int(1...8))
            bytes.insert(contentsOf: bytes[at..<end], at: at)
        default:
            let other = int(0...(bytes.count - 1))
            bytes.swapAt(at, other)
        }
        return bytes
    }

    // MARK: - Values

    package mutating func value(_ kind: Kind, depth: Int = 0) -> [UInt8] {
        if kind != .any {
            if chance(0.08) { return Array("null".utf8) }
            if chance(0.08) { return value(.any, depth: depth) }
        }
        switch kind {
        case .string: return string()
        case .integer: return chance(0.7) ? integerText() : numberText()
        case .double: return numberText()
        case .bool: return Array((chance(0.5) ? "true" : "false").utf8)
        case .any:
            switch int(0...9) {
            case 0: return Array("null".utf8)
            case 1: return Array((chance(0.5) ? "true" : "false").utf8)
            case 2, 3: return numberText()
            case 4, 5, 6: return string()
            case 7: return depth < 3 ? array(depth: depth + 1) : string()
            default: return depth < 3 ? nestedObject(depth: depth + 1) : numberText()
            }
        }
    }

    /// A string literal, quotes included. Mostly valid; sometimes with something JSONDecoder
    /// refuses when it reads the string (a raw control character, a lone surrogate, a bad
    /// escape, bytes that are not UTF-8) or that breaks the document (an unterminated `\u`).
    package mutating func string() -> [UInt8] {
        var bytes = Array("\"".utf8)
        for _ in 0..<int(0...6) {
            bytes += stringPiece()
        }
        return bytes + Array("\"".utf8)
    }

    /// An integer's text: mostly plain digits, edges of Int64 and 2^53 included.
    package mutating func integerText() -> [UInt8] {
        let edges = [
            "0", "-0", "1", "-1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
            "-9223372036854775809", "9007199254740992", "9007199254740993", "-9007199254740993",
            "18446744073709551616", "1700000000000", "1700000000000.0", "1700000000000.5", "1.0", "1e2", "-0.0",
            "100e-2", "1e-400", "1e400", "12345678901234567890123",
        ]
        if chance(0.3) { return Array(edges[int(0...(edges.count - 1))].utf8) }
        var text = chance(0.2) ? "-" : ""
        text += String(random.next() % (chance(0.5) ? 1_000 : 10_000_000_000_000))
        return Array(text.utf8)
    }

    /// A number's text: valid RFC 8259 numbers with fractions and exponents (some beyond
    /// Double's range or below its smallest subnormal), and sometimes what JSONDecoder's scanner
    /// takes for a number but its parser refuses.
    package mutating func numberText() -> [UInt8] {
        let edges = [
            "0", "-0", "0.0", "-0.0", "1.5", "-1.5", "0.1", "1e2", "1E+2", "1e-2", "0e0", "4.9e-324", "2.4e-324",
            "2.5e-324", "1e-320", "1.7976931348623157e308", "1.7976931348623159e308", "1e309", "1e-400",
            "0.0000000000000000000000000000001e-300", "9007199254740993.5", "-9223372036854775808.0",
            "123456789012345678901234567890e-20", "1.0000000000000001", "8999999999999999.5", "9e15", "-9e15",
            "1700000000000.999",
        ]
        let invalid = [
            "01", "-01", "00", "1.", ".5", "-", "--1", "1e", "1e+", "1.e5", "1.2.3", "1-2", "1+2", "+1", "1e5e5",
            "1e5.5", "0-", "-.5", "1..2", "1ee2", "1E-+2",
        ]
        if chance(0.05) { return Array(invalid[int(0...(invalid.count - 1))].utf8) }
        if chance(0.3) { return Array(edges[int(0...(edges.count - 1))].utf8) }
        var text = chance(0.3) ? "-" : ""
        text += chance(0.2) ? "0" : digits(nonZeroFirst: true, count: int(1...25))
        if chance(0.5) { text += "." + digits(nonZeroFirst: false, count: int(1...25)) }
        if chance(0.4) {
            text += chance(0.5) ? "e" : "E"
            text += ["", "+", "-"][int(0...2)]
            text += digits(nonZeroFirst: false, count: int(1...3))
        }
        return Array(text.utf8)
    }

    /// A key for `name`: usually its plain bytes, sometimes with a character escaped
    /// (`\u0062`, or `\/`), which JSONDecoder matches all the same.
    package mutating func key(_ name: String) -> [UInt8] {
        guard chance(0.1), !name.isEmpty else { return Array("\"\(name)\"".utf8) }
        let scalars = Array(name.unicodeScalars)
        let at = int(0...(scalars.count - 1))
        var text = "\""
        for (index, scalar) in scalars.enumerated() {
            if index == at {
                text += "\\u" + String(scalar.value, radix: 16, uppercase: chance(0.5)).leftPadded(to: 4)
            } else {
                text.unicodeScalars.append(scalar)
            }
        }
        return Array((text + "\"").utf8)
    }

    // MARK: - Pieces

    private mutating func member(key: [UInt8], value: [UInt8]) -> [UInt8] {
        whitespace() + key + whitespace() + Array(":".utf8) + whitespace() + value
    }

    private mutating func nestedObject(depth: Int) -> [UInt8] {
        var bytes = Array("{".utf8)
        for index in 0..<int(0...3) {
            if index > 0 { bytes += Array(",".utf8) }
            bytes += member(key: randomKeyText(), value: value(.any, depth: depth))
        }
        if bytes.count > 1, chance(0.05) { bytes += Array(",".utf8) }
        return bytes + whitespace() + Array("}".utf8)
    }

    private mutating func array(depth: Int) -> [UInt8] {
        var bytes = Array("[".utf8)
        for index in 0..<int(0...3) {
            if index > 0 { bytes += Array(",".utf8) }
            bytes += whitespace() + value(.any, depth: depth)
        }
        if bytes.count > 1, chance(0.05) { bytes += Array(",".utf8) }
        return bytes + whitespace() + Array("]".utf8)
    }

    private mutating func randomKeyText() -> [UInt8] {
        chance(0.9) ? Array("\"k\(int(0...40))\"".utf8) : string()
    }

    private mutating func stringPiece() -> [UInt8] {
        let valid: [[UInt8]] = [
            Array("abc".utf8), Array("com.example.game".utf8), Array("2000000111111111".utf8), Array(" ".utf8),
            Array(#"\""#.utf8), Array(#"\\"#.utf8), Array(#"\/"#.utf8), Array("/".utf8), Array(#"\b\f\n\r\t"#.utf8),
            Array(#"\u00e9"#.utf8), Array(#"\u00E9"#.utf8), Array(#"\u0000"#.utf8), Array(#"\u001f"#.utf8),
            Array(#"\ud83d\ude00"#.utf8), Array(#"\uD834\uDD1E"#.utf8), Array(#"\u2028"#.utf8), Array(#"\uffff"#.utf8),
            Array("é".utf8), Array("e\u{301}".utf8), Array("漢字".utf8), Array("😀".utf8), Array("\u{2028}".utf8),
            Array("\u{7f}".utf8), Array("\u{feff}".utf8), Array("\u{10ffff}".utf8),
        ]
        let invalid: [[UInt8]] = [
            [0x01], [0x1f], [0x0a], [0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80],
            [0x80],
            Array(#"\ud800"#.utf8), Array(#"\udc00"#.utf8), Array(#"\ud800\u0041"#.utf8), Array(#"\ud800x"#.utf8),
            Array(#"\x"#.utf8), Array(#"\'"#.utf8), Array(#"\u12g4"#.utf8), Array(#"\U0041"#.utf8),
        ]
        if chance(0.04) { return Array(#"\u12"#.utf8) }  // with the closing quote inside its four bytes
        return chance(0.06) ? invalid[int(0...(invalid.count - 1))] : valid[int(0...(valid.count - 1))]
    }

    private mutating func digits(nonZeroFirst: Bool, count: Int) -> String {
        var text = ""
        for index in 0..<count {
            text += String(index == 0 && nonZeroFirst ? int(1...9) : int(0...9))
        }
        return text
    }

    private mutating func whitespace() -> [UInt8] {
        guard chance(0.15) else { return [] }
        return (0..<int(1...3)).map { _ in [0x20, 0x0a, 0x0d, 0x09][int(0...3)] }
    }

    private mutating func interestingByte() -> UInt8? {
        let bytes: [UInt8] = Array(#""\,:{}[]-.e+0 1"#.utf8) + [0x00, 0x09, 0x1f, 0x7f, 0x80, 0xc3, 0xff, 0x75]
        return chance(0.8) ? bytes[int(0...(bytes.count - 1))] : nil
    }

    private mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &random) }

    private mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &random) < probability
    }
}

/// A small seeded generator (SplitMix64): the same seed, the same samples.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
