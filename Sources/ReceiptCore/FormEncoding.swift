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

    /// Why a form is not a set of parameters.
    public enum Refusal: Error, Sendable, Equatable {
        /// A name or value is not valid percent-encoded UTF-8.
        case undecodable
        /// A name sent more than once (RFC 6749 §3.1: parameters must not be repeated).
        case repeated(String)
    }

    /// The form as parameters, each name once: what OAuth endpoints and the account pages read.
    public static func parameters(_ text: String) throws(Refusal) -> [String: String] {
        guard let fields = fields(text) else { throw .undecodable }
        var parameters: [String: String] = [:]
        for (name, value) in fields {
            guard parameters[name] == nil else { throw .repeated(name) }
            parameters[name] = value
        }
        return parameters
    }
}
