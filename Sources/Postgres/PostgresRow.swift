package import Foundation

/// One result row in text format, decoded by column name into Swift types.
package struct PostgresRow: Sendable {
    let columnIndex: [String: Int]
    package let values: [String?]

    package func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        guard let index = columnIndex[column] else {
            throw PostgresError(.decodingFailed, "no column named \(column) in the result")
        }
        do {
            return try T.decode(postgresText: values[index])
        } catch let error as PostgresError {
            throw PostgresError(.decodingFailed, "column \(column): \(error.message)")
        }
    }

    package func isNull(_ column: String) -> Bool {
        columnIndex[column].map { values[$0] == nil } ?? true
    }
}

/// A Swift type read from a column's text representation.
package protocol PostgresDecodable: Sendable {
    /// `text` is nil for SQL NULL.
    static func decode(postgresText text: String?) throws -> Self
}

/// Types whose decoding from non-NULL text is a simple parse.
package protocol PostgresTextParsable: PostgresDecodable {
    init?(postgresValue text: String)
}

extension PostgresTextParsable {
    package static func decode(postgresText text: String?) throws -> Self {
        guard let text else { throw PostgresError(.decodingFailed, "unexpected NULL for \(Self.self)") }
        guard let value = Self(postgresValue: text) else {
            throw PostgresError(.decodingFailed, "cannot read \(Self.self) from the column's text")
        }
        return value
    }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    package static func decode(postgresText text: String?) throws -> Wrapped? {
        guard let text else { return nil }
        return try Wrapped.decode(postgresText: text)
    }
}

extension String: PostgresTextParsable { package init?(postgresValue text: String) { self = text } }
extension Int: PostgresTextParsable { package init?(postgresValue text: String) { self.init(text) } }
extension Int64: PostgresTextParsable { package init?(postgresValue text: String) { self.init(text) } }
extension Int32: PostgresTextParsable { package init?(postgresValue text: String) { self.init(text) } }
extension Double: PostgresTextParsable { package init?(postgresValue text: String) { self.init(text) } }
extension UUID: PostgresTextParsable { package init?(postgresValue text: String) { self.init(uuidString: text) } }

extension Bool: PostgresTextParsable {
    package init?(postgresValue text: String) {
        switch text {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}

extension Data: PostgresTextParsable {
    /// bytea in hex output format (the server default since 9.0).
    package init?(postgresValue text: String) {
        guard text.hasPrefix("\\x") else { return nil }
        var bytes: [UInt8] = []
        var high: UInt8?
        for c in text.utf8.dropFirst(2) {
            let nibble: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = c - 48
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = c - 87
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = c - 55
            default: return nil
            }
            if let h = high { bytes.append(h << 4 | nibble); high = nil } else { high = nibble }
        }
        guard high == nil else { return nil }
        self.init(bytes)
    }
}

extension Date: PostgresTextParsable {
    package init?(postgresValue text: String) {
        guard let date = PostgresTimestamp.parse(text) else { return nil }
        self = date
    }
}

extension Array: PostgresDecodable where Element == String {}
extension Array: PostgresTextParsable where Element == String {
    /// A one-dimensional text[] in the server's output format.
    package init?(postgresValue text: String) {
        guard text.first == "{", text.last == "}" else { return nil }
        var elements: [String] = []
        var current = ""
        var inQuotes = false, escaped = false, quotedElement = false
        for character in text.dropFirst().dropLast() {
            if escaped { current.append(character); escaped = false; continue }
            switch character {
            case "\\" where inQuotes: escaped = true
            case "\"": inQuotes.toggle(); quotedElement = true
            case "," where !inQuotes:
                elements.append(current); current = ""; quotedElement = false
            default: current.append(character)
            }
        }
        if !current.isEmpty || quotedElement || !elements.isEmpty { elements.append(current) }
        self = elements
    }
}

/// timestamptz text in and out. Connections are opened with `TimeZone=UTC` and `DateStyle=ISO`,
/// so the server prints `2026-11-29 23:07:40.601123+00`.
enum PostgresTimestamp {
    /// Postgres's own limits (4713 BC to 294276 AD) are far inside Int64 microseconds; beyond
    /// year 100000 the value is sent as ±infinity instead of overflowing the conversion.
    static let representable: ClosedRange<Double> = -62_135_596_800...3_093_527_980_800

    static func format(_ date: Date) -> String {
        let epoch = date.timeIntervalSince1970
        guard epoch.isFinite, representable.contains(epoch) else { return epoch > 0 ? "infinity" : "-infinity" }
        let totalMicros = Int64((epoch * 1_000_000).rounded())
        var seconds = totalMicros / 1_000_000
        var micros = totalMicros % 1_000_000
        if micros < 0 { micros += 1_000_000; seconds -= 1 }
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        // Written digit by digit: `String(format:)` costs more than the statement's parameter is worth
        // (one per date of every recorded purchase). Years before 1000 are zero-padded to four digits.
        var text: [UInt8] = []
        text.reserveCapacity(28)
        func digits(_ value: Int, _ width: Int) {
            let start = text.count
            var value = value
            for _ in 0..<width {
                text.insert(UInt8(ascii: "0") + UInt8(value % 10), at: start)
                value /= 10
            }
        }
        let year = Int(parts.tm_year) + 1900
        digits(year, year >= 10_000 ? 6 : 4)
        if year >= 10_000 { text.removeFirst(text.prefix { $0 == UInt8(ascii: "0") }.count) }
        text.append(UInt8(ascii: "-")); digits(Int(parts.tm_mon) + 1, 2)
        text.append(UInt8(ascii: "-")); digits(Int(parts.tm_mday), 2)
        text.append(UInt8(ascii: "T")); digits(Int(parts.tm_hour), 2)
        text.append(UInt8(ascii: ":")); digits(Int(parts.tm_min), 2)
        text.append(UInt8(ascii: ":")); digits(Int(parts.tm_sec), 2)
        text.append(UInt8(ascii: ".")); digits(Int(micros), 6)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    static func parse(_ text: String) -> Date? {
        // yyyy-mm-dd hh:mm:ss[.ffffff][+hh[:mm]]
        let scalars = Array(text.utf8)
        guard scalars.count >= 19 else { return nil }
        func number(_ from: Int, _ length: Int) -> Int? {
            guard from + length <= scalars.count else { return nil }
            var value = 0
            for c in scalars[from..<from + length] {
                guard c >= 48 && c <= 57 else { return nil }
                value = value * 10 + Int(c - 48)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2)
        else { return nil }
        var index = 19
        var fraction = 0.0
        if index < scalars.count, scalars[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            while index < scalars.count, scalars[index] >= 48, scalars[index] <= 57 {
                fraction += Double(scalars[index] - 48) * scale
                scale /= 10
                index += 1
            }
        }
        var offsetSeconds = 0
        if index < scalars.count {
            let sign = scalars[index] == UInt8(ascii: "-") ? -1 : 1
            guard let hours = number(index + 1, 2) else { return nil }
            var minutes = 0
            if index + 3 < scalars.count, scalars[index + 3] == UInt8(ascii: ":") {
                minutes = number(index + 4, 2) ?? 0
            }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let epoch = timegm(&parts)
        return Date(timeIntervalSince1970: Double(epoch - offsetSeconds) + fraction)
    }
}
