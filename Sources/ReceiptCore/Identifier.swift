/// The rule for identifiers callers send (player, character, server, product ids...): at most
/// `maxBytes` of UTF-8 and no control characters. A NUL would be cut off by C code and the
/// database; a newline would forge log lines.
public enum Identifier {
    public static let maxBytes = 256

    /// What is wrong with `value`, phrased to follow the field's name, or nil.
    public static func problem(_ value: String, maxBytes: Int = maxBytes) -> String? {
        if value.utf8.count > maxBytes { return "is longer than \(maxBytes) bytes of UTF-8" }
        // Printable ASCII, nearly every identifier, holds none of them: no Unicode lookups for it.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) { return nil }
        // Controls, and what can break or reorder a line in a log viewer: line and paragraph
        // separators and format characters (bidi overrides, zero-width joiners).
        if value.unicodeScalars.contains(where: { refusedCategories.contains($0.properties.generalCategory) }) {
            return "contains a control or format character"
        }
        return nil
    }

    private static let refusedCategories: Set<Unicode.GeneralCategory> = [
        .control, .format, .lineSeparator, .paragraphSeparator,
    ]
}
