import Foundation
import JSON
import TestSupport
import Testing

/// JSONWriter's bytes against JSONEncoder's with `[.sortedKeys, .withoutEscapingSlashes]`, for
/// records full of hostile strings and edge integers, written with their keys in sorted order.
@Suite struct JSONWriterAgainstJSONEncoder {
    struct Record: Encodable {
        var name: String
        var note: String?
        var count: Int64
        var limit: Int?
        var flag: Bool
        var tags: [String]
        var child: Child?

        struct Child: Encodable {
            var id: Int64
            var label: String?
            // Optional nil is encoded as null here, as NativeTransaction does.
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(id, forKey: .id)
                try container.encode(label, forKey: .label)
            }
            enum CodingKeys: String, CodingKey { case id, label }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(note, forKey: .note)
            try container.encode(count, forKey: .count)
            try container.encode(limit, forKey: .limit)
            try container.encode(flag, forKey: .flag)
            try container.encode(tags, forKey: .tags)
            try container.encode(child, forKey: .child)
            try container.encode(name, forKey: .slashKey)
        }

        enum CodingKeys: String, CodingKey {
            case name, note, count, limit, flag, tags, child, slashKey = "a/\"key\u{1}é"
        }

        /// The same keys in UTF-8 order: "a/\"key…", child, count, flag, limit, name, note, tags.
        func write(to writer: inout JSONWriter) {
            writer.beginObject()
            writer.key("a/\"key\u{1}é"); writer.string(name)
            writer.key("child")
            if let child {
                writer.beginObject()
                writer.key("id"); writer.number(child.id)
                writer.key("label"); writer.string(child.label)
                writer.endObject()
            } else {
                writer.null()
            }
            writer.key("count"); writer.number(count)
            writer.key("flag"); writer.bool(flag)
            writer.key("limit"); writer.number(limit)
            writer.key("name"); writer.string(name)
            writer.key("note"); writer.string(note)
            writer.key("tags")
            writer.beginArray()
            for tag in tags { writer.string(tag) }
            writer.endArray()
            writer.endObject()
        }
    }

    static func hostileString(_ random: inout SplitMix64) -> String {
        let pieces = [
            "plain", "\"", "\\", "/", "</script>", "\u{0}", "\u{1}", "\u{8}", "\u{9}", "\u{a}", "\u{b}", "\u{c}",
            "\u{d}",
            "\u{1b}", "\u{1f}", "\u{7f}", "\u{80}", "\u{2028}", "\u{2029}", "\u{feff}", "é", "e\u{301}", "漢", "😀",
            "\u{10ffff}", "\u{fffd}", " ", "\\u0041", "{}[],:",
        ]
        var text = ""
        for _ in 0..<Int.random(in: 0...8, using: &random) {
            text += pieces[Int.random(in: 0..<pieces.count, using: &random)]
        }
        return text
    }

    static func edgeInteger(_ random: inout SplitMix64) -> Int64 {
        let edges: [Int64] = [
            0, 1, -1, 9, 10, -10, .max, .min, .max - 1, .min + 1, 1_700_000_000_000, 9_007_199_254_740_993,
        ]
        return Bool.random(using: &random)
            ? edges[Int.random(in: 0..<edges.count, using: &random)] : Int64(bitPattern: random.next())
    }

    @Test func bytesEqualJSONEncoders() async throws {
        try await offThePool {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var random = SplitMix64(seed: 0x5EED_0010)
            for index in 0..<3000 {
                let record = Record(
                    name: Self.hostileString(&random),
                    note: Bool.random(using: &random) ? Self.hostileString(&random) : nil,
                    count: Self.edgeInteger(&random),
                    limit: Bool.random(using: &random) ? Int(Self.edgeInteger(&random)) : nil,
                    flag: Bool.random(using: &random),
                    tags: (0..<Int.random(in: 0...3, using: &random)).map { _ in Self.hostileString(&random) },
                    child: Bool.random(using: &random)
                        ? Record.Child(
                            id: Self.edgeInteger(&random),
                            label: Bool.random(using: &random) ? Self.hostileString(&random) : nil) : nil)
                var writer = JSONWriter()
                record.write(to: &writer)
                let expected = try encoder.encode(record)
                #expect(
                    writer.data == expected,
                    "record \(index): \(String(decoding: writer.data, as: UTF8.self)) vs \(String(decoding: expected, as: UTF8.self))"
                )
            }
        }
    }

    /// Every scalar below U+0080 and a few beyond, one at a time.
    @Test func everyControlAndASCIICharacterEscapesAsJSONEncoderDoes() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for value in Array(0...0x80) + [0x2028, 0x2029, 0xFEFF, 0x1F600] {
            let text = String(Character(try #require(Unicode.Scalar(UInt32(value)))))
            var writer = JSONWriter()
            writer.beginArray()
            writer.string(text)
            writer.endArray()
            #expect(writer.data == (try encoder.encode([text])), "U+\(String(value, radix: 16))")
        }
    }

    /// The writer copies eight bytes at a time: an escape at every offset of a long string.
    @Test func escapesAtEveryOffset() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for special in ["\"", "\\", "\u{0}", "\u{1f}", "\n", "é", "/"] {
            for offset in 0..<20 {
                let text = String(repeating: "a", count: offset) + special + String(repeating: "b", count: 19 - offset)
                var writer = JSONWriter()
                writer.beginArray()
                writer.string(text)
                writer.endArray()
                #expect(writer.data == (try encoder.encode([text])), "\(special.debugDescription) at \(offset)")
            }
        }
    }

    @Test func arraysOfContainersAndEmptyOnes() throws {
        var writer = JSONWriter()
        writer.beginArray()
        writer.beginObject(); writer.endObject()
        writer.beginArray(); writer.endArray()
        writer.beginObject(); writer.key("a"); writer.beginArray(); writer.null(); writer.bool(false);
        writer.endArray(); writer.endObject()
        writer.number(-7)
        writer.endArray()
        #expect(String(decoding: writer.data, as: UTF8.self) == #"[{},[],{"a":[null,false]},-7]"#)
    }
}
