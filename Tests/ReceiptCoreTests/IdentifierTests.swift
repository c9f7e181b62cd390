import Foundation
import ReceiptCore
import TestSupport
import Testing

/// Identifiers callers send (player, character, server ids): controls, separators and format
/// characters are refused, and so is anything over 256 bytes of UTF-8. The HTTP tests check only
/// that each route applies this rule and names the field.
@Suite struct Identifiers {
    static func refusedByUnicodeRule(_ value: String) -> Bool {
        value.unicodeScalars.contains {
            [.control, .format, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory)
        }
    }

    /// The printable-ASCII shortcut gives the answer the Unicode rule gives.
    @Test func everyCharacterIsJudgedAsTheUnicodeRuleJudgesIt() {
        var random = SeededRandom()
        // All of ASCII, and scalars around it: Latin-1 controls, bidi overrides, separators, zero-width joiners, emoji.
        var pool = (0..<0x80).compactMap(Unicode.Scalar.init)
        pool += [0x85, 0xA0, 0xAD, 0xE9, 0x200B, 0x200D, 0x202E, 0x2028, 0x2029, 0xFEFF, 0x1F3AE].compactMap(
            Unicode.Scalar.init)
        var samples = pool.map { "id-\(Character($0))" }
        for _ in 0..<3_000 {
            samples.append(
                String(
                    String.UnicodeScalarView(
                        (0..<Int.random(in: 1...12, using: &random)).map { _ in
                            Int.random(in: 0..<4, using: &random) == 0
                                ? pool[Int.random(in: 0..<pool.count, using: &random)]
                                : Unicode.Scalar(UInt8.random(in: 0x20...0x7e, using: &random))
                        })))
        }
        let replay = random.replay
        for sample in samples {
            #expect(
                (Identifier.problem(sample) != nil) == Self.refusedByUnicodeRule(sample),
                "\(sample.unicodeScalars.map { $0.value }) (\(replay))")
        }
    }

    /// Counted in bytes, not characters: 128 two-byte characters pass, 129 do not; any script is fine.
    @Test(arguments: [
        ("player-1", true), ("é漢🎮", true), (String(repeating: "é", count: 128), true),
        (String(repeating: "é", count: 129), false),
        (String(repeating: "a", count: 256), true), (String(repeating: "a", count: 257), false),
        ("a\u{0}b", false), ("a\nb", false), ("a\u{7f}b", false), ("a\u{85}b", false), ("a\u{2028}b", false),
        ("a\u{202E}b", false),
        ("a\u{200D}b", false),
    ])
    func identifiersAreBoundedAndPrintable(value: String, fine: Bool) {
        #expect((Identifier.problem(value) == nil) == fine)
    }
}
