import Foundation
import JSON
import TestSupport
import Testing

/// Hand-picked RFC 8259 cases, each with what the two grammars make of it. The `.jsonDecoder`
/// column is also checked against Foundation's JSONDecoder itself, so the table cannot drift
/// from what it claims to imitate.
@Suite struct JSONReaderConformance {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        let rfc8259: Bool
        let jsonDecoder: Bool
        var testDescription: String { name }

        init(_ text: String, rfc8259: Bool, jsonDecoder: Bool, name: String? = nil) {
            self.init(bytes: Array(text.utf8), rfc8259: rfc8259, jsonDecoder: jsonDecoder, name: name ?? text)
        }

        init(bytes: [UInt8], rfc8259: Bool, jsonDecoder: Bool, name: String) {
            self.name = name
            self.bytes = bytes
            self.rfc8259 = rfc8259
            self.jsonDecoder = jsonDecoder
        }
    }

    static let cases: [Case] = [
        // Values and whitespace.
        Case("{}", rfc8259: true, jsonDecoder: true), Case("[]", rfc8259: true, jsonDecoder: true),
        Case(
            " \t\r\n{\"a\" : [1, 2.5, -0, 1e400, \"x\", true, false, null]}\n", rfc8259: true, jsonDecoder: true,
            name: "every kind of value"),
        Case("\"text\"", rfc8259: true, jsonDecoder: true), Case("0", rfc8259: true, jsonDecoder: true),
        Case("-0", rfc8259: true, jsonDecoder: true), Case("null", rfc8259: true, jsonDecoder: true),
        Case("", rfc8259: false, jsonDecoder: false, name: "empty"),
        Case("  ", rfc8259: false, jsonDecoder: false, name: "only whitespace"),
        Case("\u{0C}{}", rfc8259: false, jsonDecoder: false, name: "form feed is not whitespace"),
        Case("{\"a\":1}x", rfc8259: false, jsonDecoder: false), Case("{}{}", rfc8259: false, jsonDecoder: false),
        Case("{\"a\" 1}", rfc8259: false, jsonDecoder: false), Case("{\"a\":}", rfc8259: false, jsonDecoder: false),
        Case("{\"a\":1", rfc8259: false, jsonDecoder: false), Case("\"abc", rfc8259: false, jsonDecoder: false),
        Case("tru", rfc8259: false, jsonDecoder: false), Case("True", rfc8259: false, jsonDecoder: false),
        Case("{\"a\":1,\"a\":2}", rfc8259: true, jsonDecoder: true, name: "duplicate keys are allowed"),
        // Numbers: JSONDecoder checks a number's grammar only when it reads it.
        Case("[01]", rfc8259: false, jsonDecoder: true), Case("{\"a\":01}", rfc8259: false, jsonDecoder: true),
        Case("[-]", rfc8259: false, jsonDecoder: true), Case("[1.]", rfc8259: false, jsonDecoder: true),
        Case("[1e]", rfc8259: false, jsonDecoder: true), Case("[1.2.3]", rfc8259: false, jsonDecoder: true),
        Case("[.5]", rfc8259: false, jsonDecoder: false), Case("[+1]", rfc8259: false, jsonDecoder: false),
        Case("[0x10]", rfc8259: false, jsonDecoder: false), Case("[NaN]", rfc8259: false, jsonDecoder: false),
        Case("[Infinity]", rfc8259: false, jsonDecoder: false), Case("[-Infinity]", rfc8259: false, jsonDecoder: false),
        // Commas and quotes.
        Case("[1,]", rfc8259: false, jsonDecoder: true), Case("{\"a\":1,}", rfc8259: false, jsonDecoder: true),
        Case("{\"a\":[1,],}", rfc8259: false, jsonDecoder: true), Case("[,]", rfc8259: false, jsonDecoder: false),
        Case("[1,,2]", rfc8259: false, jsonDecoder: false), Case("{,}", rfc8259: false, jsonDecoder: false),
        Case("{\"a\":1,,}", rfc8259: false, jsonDecoder: false), Case("['a']", rfc8259: false, jsonDecoder: false),
        Case("{'a':1}", rfc8259: false, jsonDecoder: false), Case("{a:1}", rfc8259: false, jsonDecoder: false),
        // Strings: a skipped string's content is not checked by JSONDecoder; a key always is.
        Case("[\"a\tb\"]", rfc8259: false, jsonDecoder: true, name: "raw tab in a string"),
        Case(
            bytes: Array("[\"a".utf8) + [0] + Array("b\"]".utf8), rfc8259: false, jsonDecoder: true,
            name: "raw NUL in a string"),
        Case("{\"a\u{01}\":1}", rfc8259: false, jsonDecoder: false, name: "raw control character in a key"),
        Case(#"["\ud83d\ude00"]"#, rfc8259: true, jsonDecoder: true),
        Case(#"["\u00e9\u00E9"]"#, rfc8259: true, jsonDecoder: true),
        Case(#"["\ud800"]"#, rfc8259: false, jsonDecoder: true),
        Case(#"["\udc00"]"#, rfc8259: false, jsonDecoder: true),
        Case(#"["\ud800\u0041"]"#, rfc8259: false, jsonDecoder: true),
        Case(#"{"\ud800":1}"#, rfc8259: false, jsonDecoder: false),
        Case(#"["\x"]"#, rfc8259: false, jsonDecoder: true), Case(#"{"\x":1}"#, rfc8259: false, jsonDecoder: false),
        Case(#"["\u12"]"#, rfc8259: false, jsonDecoder: false),
        Case(#"["\u12"+"]"#, rfc8259: false, jsonDecoder: false),
        Case(#"["\uzzzz"]"#, rfc8259: false, jsonDecoder: true), Case(#"["\u0000"]"#, rfc8259: true, jsonDecoder: true),
        Case(
            bytes: Array("[\"".utf8) + [0xFF] + Array("\"]".utf8), rfc8259: false, jsonDecoder: true,
            name: "0xFF in a string"),
        Case(
            bytes: Array("[\"".utf8) + [0xED, 0xA0, 0x80] + Array("\"]".utf8), rfc8259: false, jsonDecoder: true,
            name: "UTF-8 surrogate"),
        Case(
            bytes: Array("{\"".utf8) + [0xC0, 0x80] + Array("\":1}".utf8), rfc8259: false, jsonDecoder: false,
            name: "overlong UTF-8 in a key"),
        Case(
            bytes: [0xEF, 0xBB, 0xBF] + Array("{}".utf8), rfc8259: false, jsonDecoder: true,
            name: "UTF-8 byte order mark"),
        Case(
            bytes: Array("[".utf8) + [0xC3, 0xA9] + Array("]".utf8), rfc8259: false, jsonDecoder: false,
            name: "UTF-8 outside a string"),
        // Nesting: 512 levels, not 513.
        Case(
            String(repeating: "[", count: 512) + String(repeating: "]", count: 512), rfc8259: true, jsonDecoder: true,
            name: "512 nested arrays"),
        Case(
            String(repeating: "[", count: 513) + String(repeating: "]", count: 513), rfc8259: false, jsonDecoder: false,
            name: "513 nested arrays"),
        Case(
            "{\"a\":" + String(repeating: "{\"a\":", count: 511) + "1" + String(repeating: "}", count: 512),
            rfc8259: true, jsonDecoder: true, name: "512 nested objects"),
        Case(
            "{\"a\":" + String(repeating: "[", count: 512) + String(repeating: "]", count: 512) + "}", rfc8259: false,
            jsonDecoder: false,
            name: "513 levels under a key"),
    ]

    @Test(arguments: cases)
    func grammars(_ sample: Case) {
        let data = Data(sample.bytes)
        let strict = Result { () throws(JSONReaderError) in
            try JSONReader.withDocument(data, grammar: .rfc8259) { reader throws(JSONReaderError) in
                try reader.readDocument()
            }
        }
        let lenient = Result { () throws(JSONReaderError) in
            try JSONReader.withDocument(data, grammar: .jsonDecoder) { reader throws(JSONReaderError) in
                try reader.readDocument()
            }
        }
        #expect(((try? strict.get()) != nil) == sample.rfc8259, "rfc8259: \(strict)")
        #expect(((try? lenient.get()) != nil) == sample.jsonDecoder, "jsonDecoder: \(lenient)")
        #expect(Self.foundationAccepts(data) == sample.jsonDecoder, "JSONDecoder disagrees with the table")
    }

    /// An object as a keyed container reads it (every key checked, no value read); anything else
    /// scanned and not read.
    static func foundationAccepts(_ data: Data) -> Bool {
        let isObject = data.first { ![0x20, 0x0A, 0x0D, 0x09, 0xEF, 0xBB, 0xBF].contains($0) } == UInt8(ascii: "{")
        return isObject
            ? (try? JSONDecoder().decode(OneField.self, from: data)) != nil
            : (try? JSONDecoder().decode(Unread.self, from: data)) != nil
    }

    /// One field, so that the keyed container (which reads every key) is made.
    struct OneField: Decodable { var unused: Int? }
    struct Unread: Decodable { init(from decoder: any Decoder) throws {} }

    /// The scan takes eight bytes at a time: a quote, backslash, control or non-ASCII byte at
    /// every offset of a long string must still be seen.
    @Test func specialBytesAtEveryOffset() throws {
        for special: [UInt8] in [
            Array(#"\""#.utf8), Array(#"\\"#.utf8), Array(#"\u00e9"#.utf8), [0x01], [0x1F], [0xC3, 0xA9], [0xFF],
            [0x7F],
        ] {
            for offset in 0..<20 {
                let bytes =
                    Array("{\"s\":\"".utf8) + Array(repeating: UInt8(ascii: "a"), count: offset) + special
                    + Array(repeating: UInt8(ascii: "b"), count: 19 - offset) + Array("\"}".utf8)
                JSONReaderAgainstJSONDecoder.compare(bytes, "\(special) at \(offset)")
            }
        }
    }

    @Test func utf16AndUTF32AreLeftToJSONDecoder() throws {
        let text = #"{"s":"hi"}"#
        let utf16LE = Data(text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let utf32BE = Data(text.unicodeScalars.flatMap { [0, 0, 0, UInt8($0.value)] })
        for data in [utf16LE, utf32BE, Data([0xFF, 0xFE] + Array(utf16LE))] {
            #expect(throws: JSONReaderError(.unsupportedEncoding, "")) {
                try JSONReader.withDocument(data, grammar: .jsonDecoder) { reader throws(JSONReaderError) in
                    try reader.readDocument()
                }
            }
            #expect(try JSONDecoder().decode([String: String].self, from: data) == ["s": "hi"])
        }
        // Under RFC 8259, JSON is UTF-8: the zero bytes are simply not JSON.
        #expect(throws: JSONReaderError(.syntax, "")) {
            try JSONReader.withDocument(utf16LE) { reader throws(JSONReaderError) in try reader.readDocument() }
        }
    }

    @Test func fieldsArriveInOrderWithTheirValues() throws {
        let data = Data(
            #"{"s":"a\"b\u00e9\ud83d\ude00","n":-12.5e1,"t":true,"z":null,"o":{"x":[1,{"y":2}]},"a":[]}"#.utf8)
        var seen: [String] = []
        _ = try JSONReader.withDocument(data) { reader throws(JSONReaderError) in
            try reader.readDocument { field throws(JSONReaderError) in
                let key = try reader.string(field.key)
                seen.append(key)
                switch key {
                case "s": #expect(try reader.string(field.value) == "a\"bé😀")
                case "n":
                    #expect(try reader.double(field.value) == -125)
                    #expect(try reader.int64(field.value) == -125)
                    if case .number(let token) = field.value { #expect(try reader.text(token) == "-12.5e1") }
                case "t": #expect(try reader.bool(field.value) == true)
                case "z": #expect(try reader.string(field.value) == nil)
                case "o":
                    guard case .object(let object) = field.value else {
                        Issue.record("o is \(field.value.typeName)"); return
                    }
                    try reader.forEachField(of: object) { inner throws(JSONReaderError) in
                        #expect(try reader.string(inner.key) == "x")
                        guard case .array(let array) = inner.value else {
                            Issue.record("x is \(inner.value.typeName)"); return
                        }
                        var kinds: [String] = []
                        try reader.forEachElement(of: array) { element throws(JSONReaderError) in
                            kinds.append(element.typeName)
                        }
                        #expect(kinds == ["number", "object"])
                    }
                case "a": #expect(field.value.typeName == "array")
                default: Issue.record("unexpected key \(key)")
                }
            }
        }
        #expect(seen == ["s", "n", "t", "z", "o", "a"])
    }

    @Test func aWrongTypeIsAMismatchNotASyntaxError() throws {
        _ = try JSONReader.withDocument(Data(#"{"a":"1"}"#.utf8)) { reader throws(JSONReaderError) in
            try reader.readDocument { field throws(JSONReaderError) in
                #expect(throws: JSONReaderError(.typeMismatch, "")) { try reader.int64(field.value) }
                #expect(throws: JSONReaderError(.typeMismatch, "")) { try reader.bool(field.value) }
            }
        }
    }

    /// JSONDecoder matches keys by String equality: canonical equivalence, not bytes.
    @Test func keysMatchAsJSONDecoderMatchesThem() throws {
        struct Named: Decodable, Equatable {
            let cafe: Int?, kelvin: Int?
            enum CodingKeys: String, CodingKey { case cafe = "caf\u{E9}", kelvin = "K" }
        }
        let names = JSONFieldNames(["caf\u{E9}", "K"])
        for (document, expected) in [
            (#"{"cafe\u0301":1,"\u212a":2}"#, Named(cafe: 1, kelvin: 2)),
            (#"{"café":1,"cafe\u0301":3}"#, Named(cafe: 1, kelvin: nil)),
            (#"{"K":2,"caf":1}"#, Named(cafe: nil, kelvin: 2)),
        ] {
            let data = Data(document.utf8)
            #expect(try JSONDecoder().decode(Named.self, from: data) == expected, "\(document)")
            var found: [Int: Int] = [:]
            _ = try JSONReader.withDocument(data, grammar: .jsonDecoder) { reader throws(JSONReaderError) in
                try reader.readDocument { field throws(JSONReaderError) in
                    if let index = try names.index(of: field.key, in: reader), found[index] == nil {
                        found[index] = try reader.int(field.value)
                    }
                }
            }
            #expect(Named(cafe: found[0], kelvin: found[1]) == expected, "\(document)")
        }
    }
}

/// Thousands of generated documents and byte-level mutations of them, decoded both by
/// JSONDecoder and by a JSONReader decoder of the same type under `.jsonDecoder`: both must fail,
/// or both succeed with equal values (doubles compared bit for bit).
@Suite struct JSONReaderAgainstJSONDecoder {
    struct Record: Decodable, Equatable {
        var s: String?
        var i: Int?
        var l: Int64?
        var d: Double?
        var b: Bool?
        var o: Inner?
        var a: [Int64]?

        struct Inner: Decodable, Equatable {
            var x: String?
            var y: Int?
        }

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.s == rhs.s && lhs.i == rhs.i && lhs.l == rhs.l && lhs.d?.bitPattern == rhs.d?.bitPattern
                && lhs.b == rhs.b
                && lhs.o == rhs.o && lhs.a == rhs.a
        }
    }

    static let names = JSONFieldNames(["s", "i", "l", "d", "b", "o", "a"])
    static let innerNames = JSONFieldNames(["x", "y"])
    static let fields: [(name: String, kind: JSONSamples.Kind)] = [
        ("s", .string), ("i", .integer), ("l", .integer), ("d", .double),
        ("b", .bool), ("o", .any), ("a", .any),
    ]

    static func read(_ data: Data) throws(JSONReaderError) -> Record {
        var record = Record()
        try JSONReader.withDocument(data, grammar: .jsonDecoder) { reader throws(JSONReaderError) in
            var seen = Set<Int>()
            let top = try reader.readDocument { field throws(JSONReaderError) in
                guard let index = try names.index(of: field.key, in: reader), seen.insert(index).inserted else {
                    return
                }
                switch index {
                case 0: record.s = try reader.string(field.value)
                case 1: record.i = try reader.int(field.value)
                case 2: record.l = try reader.int64(field.value)
                case 3: record.d = try reader.double(field.value)
                case 4: record.b = try reader.bool(field.value)
                case 5: record.o = try readInner(field.value, reader)
                default: record.a = try readArray(field.value, reader)
                }
            }
            guard case .object = top else { throw .typeMismatch(expected: "object", found: top) }
        }
        return record
    }

    static func readInner(_ value: JSONReader.Value, _ reader: JSONReader) throws(JSONReaderError) -> Record.Inner? {
        switch value {
        case .null: return nil
        case .object(let object):
            var inner = Record.Inner()
            var seen = Set<Int>()
            try reader.forEachField(of: object) { field throws(JSONReaderError) in
                guard let index = try innerNames.index(of: field.key, in: reader), seen.insert(index).inserted else {
                    return
                }
                if index == 0 {
                    inner.x = try reader.string(field.value)
                } else {
                    inner.y = try reader.int(field.value)
                }
            }
            return inner
        default: throw .typeMismatch(expected: "object", found: value)
        }
    }

    /// `[Int64]`: a null element is an error, as JSONDecoder's valueNotFound.
    static func readArray(_ value: JSONReader.Value, _ reader: JSONReader) throws(JSONReaderError) -> [Int64]? {
        switch value {
        case .null: return nil
        case .array(let array):
            var elements: [Int64] = []
            try reader.forEachElement(of: array) { element throws(JSONReaderError) in
                guard let number = try reader.int64(element) else {
                    throw .typeMismatch(expected: "number", found: element)
                }
                elements.append(number)
            }
            return elements
        default: throw .typeMismatch(expected: "array", found: value)
        }
    }

    static func compare(_ bytes: [UInt8], _ label: String) {
        let data = Data(bytes)
        let foundation = try? JSONDecoder().decode(Record.self, from: data)
        let reader: Record?
        do throws(JSONReaderError) {
            reader = try read(data)
        } catch  where error.code == .unsupportedEncoding {
            return  // UTF-16 or UTF-32 by JSONDecoder's detection: the callers hand those to JSONDecoder
        } catch {
            reader = nil
        }
        #expect(
            foundation == reader,
            "\(label): JSONDecoder \(foundation.map { "\($0)" } ?? "refused"), reader \(reader.map { "\($0)" } ?? "refused") for \(String(decoding: bytes, as: UTF8.self).debugDescription) \(bytes)"
        )
    }

    @Test func generatedDocuments() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0001)
            var accepted = 0
            let count = JSONSamples.rounds(4000)
            for index in 0..<count {
                let document = samples.object(fields: Self.fields, unknownKeys: ["S", "s ", "ii"])
                if (try? JSONDecoder().decode(Record.self, from: Data(document))) != nil { accepted += 1 }
                Self.compare(document, "document \(index)")
            }
            // Both outcomes must be well represented, or the comparison proves little.
            #expect(accepted > count / 4 && accepted < count * 19 / 20, "accepted \(accepted) of \(count)")
        }
    }

    @Test func mutatedDocuments() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0002)
            for index in 0..<JSONSamples.rounds(4000) {
                var document = samples.object(fields: Self.fields)
                for _ in 0..<(index % 3 + 1) { document = samples.mutate(document) }
                Self.compare(document, "mutation \(index)")
            }
        }
    }

    /// Every number form, alone in each numeric field: Int, Int64 and Double conversions.
    @Test func numbers() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0003)
            for index in 0..<JSONSamples.rounds(3000) {
                let number = index.isMultiple(of: 2) ? samples.numberText() : samples.integerText()
                for key in ["i", "l", "d"] {
                    Self.compare(Array("{\"\(key)\":".utf8) + number + Array("}".utf8), "number \(index)")
                }
            }
        }
    }

    /// What Foundation does that RFC 8259 does not say, each checked against JSONDecoder too: if
    /// Foundation changes, this names what changed.
    @Test(arguments: [
        (#"{"k":1,}"#, true, "trailing comma accepted"),
        (#"{"x":01,"y":"\q","z":[1,]}"#, true, "values never read are not checked"),
        (#"{"s":"first","s":"second"}"#, true, "the first of duplicate keys counts"),
        (#"{"s":"first","s":2}"#, true, "a later duplicate is not read"),
        (#"{"i":1e-400}"#, true, "Int: 1e-400 is 0"),
        (#"{"i":1.0000000000000001}"#, true, "Int: rounds through Double"),
        (#"{"l":9007199254740993.5}"#, true, "Int64 beyond 2^53: Decimal truncates"),
        (#"{"l":123456789012345678901234567890e-20}"#, false, "Int64: Decimal overflows"),
        (#"{"d":123456789012345678901234567890e-20}"#, true, "Double: fine"),
        (#"{"d":0e5}"#, false, "Double: 0e5 refused (the zero check)"),
        (#"{"d":0e10}"#, true, "Double: 0e10 accepted"), (#"{"d":0.00e12}"#, false, "Double: 0.00e12 refused"),
        (#"{"d":1e-400}"#, false, "Double: underflow refused"), (#"{"d":1e-320}"#, true, "Double: subnormal accepted"),
        (#"{"s":"\u0000"}"#, true, "escaped NUL accepted"),
    ])
    func foundationQuirks(document: String, accepted: Bool, what: String) {
        #expect(
            ((try? JSONDecoder().decode(Record.self, from: Data(document.utf8))) != nil) == accepted,
            "JSONDecoder changed: \(what)")
        Self.compare(Array(document.utf8), what)
    }

    @Test func topLevelValuesThatAreNotObjects() {
        for text in ["[]", "[1]", "\"s\"", "1", "true", "null", " null ", "[{\"s\":\"x\"}]"] {
            Self.compare(Array(text.utf8), text)
        }
    }
}
