package import Foundation

/// SQL text with bound parameters. Interpolating a value never splices it into the text: it
/// becomes `$n` and travels separately, so no value can change the statement.
///
///     let rows = try conn.query("SELECT id FROM clients WHERE name = \(name) AND game_id = \(gameID)")
package struct PostgresQuery: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    package private(set) var sql: String
    package private(set) var bindings: [String?]

    package init(stringLiteral value: String) {
        sql = value
        bindings = []
    }

    package init(stringInterpolation: StringInterpolation) {
        sql = stringInterpolation.sql
        bindings = stringInterpolation.bindings
    }

    /// A statement and its parameters given separately (`$1`, `$2`... in `sql`).
    package init(unsafeSQL sql: String, bindings: [any PostgresEncodable] = []) {
        self.sql = sql
        self.bindings = bindings.map(\.postgresText)
    }

    /// Only the statement: parameter values are left out because they may be secrets.
    package var description: String { sql }

    package struct StringInterpolation: StringInterpolationProtocol {
        var sql = ""
        var bindings: [String?] = []

        package init(literalCapacity: Int, interpolationCount: Int) {
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        package mutating func appendLiteral(_ literal: String) { sql += literal }

        package mutating func appendInterpolation(_ value: some PostgresEncodable) {
            bindings.append(value.postgresText)
            sql += "$\(bindings.count)"
        }

        package mutating func appendInterpolation(_ value: (some PostgresEncodable)?) {
            bindings.append(value?.postgresText)
            sql += "$\(bindings.count)"
        }

        /// Splices SQL text written by the program (an identifier, a fragment). Never pass input.
        package mutating func appendInterpolation(unescaped text: String) { sql += text }

        /// Embeds a fragment built the same way (a shared WHERE condition), its parameters
        /// renumbered after ours. Fragments are program text: no `$` other than parameters.
        package mutating func appendInterpolation(_ fragment: PostgresQuery) {
            let offset = bindings.count
            var text = fragment.sql[...]
            while let dollar = text.firstIndex(of: "$") {
                sql += text[..<dollar]
                let digits = text[text.index(after: dollar)...].prefix { $0.isASCII && $0.isNumber }
                if let number = Int(digits) {
                    sql += "$\(number + offset)"
                } else {
                    sql += "$"
                }
                text = text[text.index(after: dollar)...].dropFirst(digits.count)
            }
            sql += text
            bindings += fragment.bindings
        }
    }
}

/// A value sent as a text-format parameter; the server infers its type from the statement.
package protocol PostgresEncodable: Sendable {
    /// The parameter in PostgreSQL's text input format; nil is SQL NULL.
    var postgresText: String? { get }
}

extension String: PostgresEncodable { package var postgresText: String? { self } }
extension Int: PostgresEncodable { package var postgresText: String? { String(self) } }
extension Int64: PostgresEncodable { package var postgresText: String? { String(self) } }
extension Int32: PostgresEncodable { package var postgresText: String? { String(self) } }
extension Bool: PostgresEncodable { package var postgresText: String? { self ? "true" : "false" } }
extension Double: PostgresEncodable { package var postgresText: String? { String(self) } }
extension UUID: PostgresEncodable { package var postgresText: String? { uuidString.lowercased() } }

extension Data: PostgresEncodable {
    /// bytea hex format (`\x...`).
    package var postgresText: String? {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        out.reserveCapacity(2 + count * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension Date: PostgresEncodable {
    /// ISO 8601 in UTC with microseconds, which timestamptz reads without loss.
    package var postgresText: String? { PostgresTimestamp.format(self) }
}

extension Array: PostgresEncodable where Element == String {
    /// A text[] array literal: every element quoted, `"` and `\` escaped. The group commit passes
    /// each batch's webhook bodies as arrays, so this runs over every byte a webhook carries
    /// (Foundation's `replacingOccurrences` took a quarter of the service's CPU there): the runs
    /// between escapes are copied whole.
    package var postgresText: String? {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(2 + reduce(0) { $0 + $1.utf8.count + 3 })
        for (index, element) in enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            var element = element
            element.withUTF8 { bytes in
                var run = 0
                for (at, byte) in bytes.enumerated() where byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") {
                    out.append(contentsOf: bytes[run..<at])
                    out.append(UInt8(ascii: "\\"))
                    run = at
                }
                out.append(contentsOf: bytes[run...])
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
