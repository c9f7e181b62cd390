import Foundation
import JSON
import Testing

/// `JSONValue(parsing:)` against JSONSerialization, which the store plugins read with before: the
/// same documents pass, and what passes reads the same, down to the last of duplicate keys.
@Suite struct JSONValueAgainstJSONSerialization {
    static let documents: [String] = [
        #"{"a":"1","a":"2"}"#,
        #"{"a":{"b":1,"b":[true]},"c":null}"#,
        #"{"a":1,}"#,
        #"{"a":[1,2,],"b":{"c":3,},}"#,
        "\u{FEFF}{\"a\":1}",
        #"  {"a" : "x" }  "#,
        #"{"deep":{"a":"\ud800"}}"#,
        #"{"deep":{"a":"\ud83d\ude00","\u00e9":"e\u0301"}}"#,
        #"{"deep":[{"a":01}]}"#,
        #"{"deep":[{"a":1.}]}"#,
        #"{"deep":[{"a":-}]}"#,
        #"{"deep":{"a":"\x"}}"#,
        #"{"deep":{"\ud800":1}}"#,
        #"{"n":[0,-0,1.0,1e2,1.5,-2.25e-3,12345678901234567890,9007199254740993]}"#,
        #"{"s":"a\/b\n\t\"\\ \u0000 é"}"#,
        #"{"a":1}{"b":2}"#,
        #"{"a":1"#,
        #"{"a":tru}"#,
        #"{"a":"x"} x"#,
        #"[{"a":1},"b",null,false]"#,
        "{}",
        "[]",
        "",
        "nul",
        "{\"raw\":\"tab\tinside\"}",
    ]

    @Test(arguments: documents)
    func readsWhatJSONSerializationReads(_ text: String) throws {
        try expectSameReading(Data(text.utf8), label: text)
    }

    @Test func utf16AndUTF32AreTranscodedAsJSONSerializationReadsThem() throws {
        let text = #"{"name":"é😀","list":[1,2]}"#
        for encoding in [
            String.Encoding.utf16BigEndian, .utf16LittleEndian, .utf16, .utf32BigEndian, .utf32LittleEndian,
        ] {
            let data = try #require(text.data(using: encoding))
            try expectSameReading(data, label: "\(encoding)")
            #expect(JSONValue(parsing: data)?["name"]?.string == "é😀")
        }
    }

    @Test func theLastOfDuplicateKeysIsKept() {
        #expect(JSONValue(parsing: Data(#"{"a":"1","a":"2"}"#.utf8))?["a"]?.string == "2")
    }

    @Test func numbersKeepTheirTextUntilATypeIsAskedFor() throws {
        let value = try #require(JSONValue(parsing: Data(#"{"a":1.0,"b":-2.9,"c":true,"d":"3","e":1e300}"#.utf8)))
        #expect(value["a"] == .number("1.0"))
        #expect(value["a"]?.truncatedInteger == 1)
        #expect(value["b"]?.truncatedInteger == -2)
        #expect(value["c"]?.truncatedInteger == 1)
        #expect(value["d"]?.truncatedInteger == nil)
        #expect(value["e"]?.truncatedInteger == nil)
        #expect(value["a"]?.numberText == "1.0")
        #expect(value["b"]?.numberText == "-2.9")
        #expect(value["c"]?.double == 1)
    }

    @Test func encodesAsJSONEncoderWritesItsValues() throws {
        let value = try #require(
            JSONValue(parsing: Data(#"{"b":[1.0,2.5,null,"x/y"],"a":{"d":false,"c":18446744073709551615}}"#.utf8)))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(
            String(decoding: try encoder.encode(value), as: UTF8.self)
                == #"{"a":{"c":18446744073709551615,"d":false},"b":[1,2.5,null,"x/y"]}"#)
        #expect(try JSONDecoder().decode(JSONValue.self, from: try encoder.encode(value))["b"]?.array?.count == 4)
    }

    /// Both refuse, or both read equal trees.
    private func expectSameReading(_ data: Data, label: String) throws {
        let reference = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        let value = JSONValue(parsing: data)
        #expect((reference == nil) == (value == nil), "\(label.debugDescription): accepted by only one")
        if let reference, let value {
            #expect(Self.matches(value, reference), "\(label.debugDescription): \(value) against \(reference)")
        }
    }

    private static func matches(_ value: JSONValue, _ reference: Any) -> Bool {
        switch value {
        case .null: return reference is NSNull
        case .string(let text): return reference as? String == text
        case .bool(let bool):
            return String(describing: type(of: reference)).contains("Boolean") && (reference as? Bool) == bool
        case .number(let text):
            guard let number = reference as? NSNumber, !String(describing: type(of: reference)).contains("Boolean")
            else { return false }
            if let whole = Int64(text) { return number.int64Value == whole }
            return number.doubleValue == Double(text)
        case .array(let elements):
            guard let array = reference as? [Any], array.count == elements.count else { return false }
            return zip(elements, array).allSatisfy { matches($0, $1) }
        case .object(let members):
            guard let object = reference as? [String: Any], object.count == members.count else { return false }
            return members.allSatisfy { key, member in object[key].map { matches(member, $0) } ?? false }
        }
    }
}
