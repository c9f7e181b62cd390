import Foundation
import HTTPServer
import ReceiptCore

/// A submitted form (`application/x-www-form-urlencoded`): every field in order, repeated names kept.
struct ConsoleForm: Sendable {
    /// More fields than any console form has is not a form of ours.
    static let maximumFields = 200

    let fields: [(name: String, value: String)]

    init(_ fields: [(name: String, value: String)]) { self.fields = fields }

    /// Nil when the body is not a form: another content type, more fields than a form of ours has,
    /// or a field that is not valid percent-encoded UTF-8 or holds a NUL.
    init?(request: HTTPRequest) {
        let type = request.headers["content-type"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
            .lowercased()
        guard type == "application/x-www-form-urlencoded", let text = String(data: request.body, encoding: .utf8),
            let fields = FormEncoding.fields(text), fields.count <= Self.maximumFields,
            // A NUL is not text any form of ours sends (and the database would refuse it).
            !fields.contains(where: { $0.name.contains("\u{0}") || $0.value.contains("\u{0}") })
        else { return nil }
        self.fields = fields
    }

    subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    func all(_ name: String) -> [String] { fields.filter { $0.name == name }.map(\.value) }

    /// Trimmed; nil when absent or blank.
    func text(_ name: String) -> String? {
        guard let value = self[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            return nil
        }
        return value
    }

    /// The lines of a textarea, trimmed, blank ones dropped.
    func lines(_ name: String) -> [String] {
        (self[name] ?? "").split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
    }

    var confirmed: Bool { self["confirm"] == "yes" }
}

/// Cookies the browser sent: the first value of each name.
enum Cookies {
    static func parse(_ header: String?) -> [String: String] {
        var cookies: [String: String] = [:]
        for pair in (header ?? "").split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let name = parts[0].trimmingCharacters(in: .whitespaces)
            if cookies[name] == nil { cookies[name] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        return cookies
    }
}
