import Foundation

/// `application/x-www-form-urlencoded` (what HTML forms and OAuth clients send), decoded once for
/// every route that reads one; each caller decides what a repeated or undecodable field means.
public enum FormEncoding {
    /// One name or value: `+` is a space, then percent-decoding. Nil if it is not valid
    /// percent-encoded UTF-8.
    public static func decode(_ part: Substring) -> String? {
        part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// Every `name=value` pair in order, repeats kept, empty pairs skipped; nil if any name or
    /// value does not decode.
    public static func fields(_ text: String) -> [(name: String, value: String)]? {
        var fields: [(name: String, value: String)] = []
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else { return nil }
            fields.append((name, value))
        }
        return fields
    }
}
