import Foundation
import ReceiptCore
import Testing

/// Identifiers: the printable-ASCII shortcut gives the answer the Unicode rule gives.
@Suite struct IdentifierRule {
    static func refusedByUnicodeRule(_ value: String) -> Bool {
        value.unicodeScalars.contains { [.control, .format, .lineSeparator, .paragraphSeparator].contains($0.properties.generalCategory) }
    }

    @Test func everyCharacterIsJudgedAsTheUnicodeRuleJudgesIt() {
        var generator = SystemRandomNumberGenerator()
        // All of ASCII, and scalars around it: Latin-1 controls, bidi overrides, separators, zero-width joiners, emoji.
        var pool = (0..<0x80).compactMap(Unicode.Scalar.init)
        pool += [0x85, 0xA0, 0xAD, 0xE9, 0x200B, 0x200D, 0x202E, 0x2028, 0x2029, 0xFEFF, 0x1F3AE].compactMap(Unicode.Scalar.init)
        var samples = pool.map { "id-\(Character($0))" }
        for _ in 0..<3_000 {
            samples.append(String(String.UnicodeScalarView((0..<Int.random(in: 1...12, using: &generator)).map { _ in
                Int.random(in: 0..<4, using: &generator) == 0 ? pool.randomElement(using: &generator)! : Unicode.Scalar(UInt8.random(in: 0x20...0x7e, using: &generator))
            })))
        }
        for sample in samples {
            #expect((Identifier.problem(sample) != nil) == Self.refusedByUnicodeRule(sample), "\(sample.unicodeScalars.map { $0.value })")
        }
        #expect(Identifier.problem("player-42_x.y@z") == nil)
        #expect(Identifier.problem("a\u{7f}b") != nil && Identifier.problem("a\u{202E}b") != nil)
    }
}
