import Foundation

/// HTML text, escaped where it is made: a `HTML` value is markup, a `String` put into one goes
/// through `escape`. Pages are built from these, never by pasting strings into markup.
struct HTML: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    private(set) var markup: String

    init(markup: String) { self.markup = markup }
    init(stringLiteral value: String) { markup = value }
    init(stringInterpolation: Interpolation) { markup = stringInterpolation.markup }

    var description: String { markup }

    struct Interpolation: StringInterpolationProtocol {
        var markup = ""
        init(literalCapacity: Int, interpolationCount: Int) { markup.reserveCapacity(literalCapacity * 2) }
        mutating func appendLiteral(_ literal: String) { markup += literal }
        /// Text: escaped.
        mutating func appendInterpolation(_ text: String) { markup += HTML.escape(text) }
        mutating func appendInterpolation(_ text: String?) { markup += HTML.escape(text ?? "") }
        mutating func appendInterpolation(_ number: Int) { markup += String(number) }
        mutating func appendInterpolation(_ number: Int64) { markup += String(number) }
        /// Markup: as is.
        mutating func appendInterpolation(_ html: HTML) { markup += html.markup }
        mutating func appendInterpolation(_ parts: [HTML]) { for part in parts { markup += part.markup } }
    }

    static func + (lhs: HTML, rhs: HTML) -> HTML { HTML(markup: lhs.markup + rhs.markup) }
    static func += (lhs: inout HTML, rhs: HTML) { lhs.markup += rhs.markup }

    /// Safe in element content and in double-quoted attribute values.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters other than tab and newline have no business on a page.
                if scalar.value < 0x20 && scalar != "\t" && scalar != "\n" {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// A path segment or query value for an `href`.
    static func component(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .urlUnreservedCharacters) ?? ""
    }
}

extension CharacterSet {
    /// RFC 3986's unreserved characters: everything else in a URL component is percent-encoded.
    static let urlUnreservedCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

/// A date as the console shows it: UTC, to the second.
enum ConsoleTime {
    static func show(_ date: Date?) -> String {
        guard let date else { return "" }
        return String(Timestamps.iso8601(date).replacingOccurrences(of: "T", with: " ").prefix(19)) + "Z"
    }
}
