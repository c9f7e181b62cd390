import Foundation
import JSON

/// How Xsolla's loosely typed JSON is read: ids come as numbers or strings, amounts as numbers
/// or decimal strings (`"[null]"` where an item was paid in virtual currency), dates as ISO 8601
/// with an offset. Nothing here fails: a value that cannot be read is nil.
enum XsollaValues {
    /// A number or a non-empty string as text (an integer's digits, never `1.0`).
    static func text(_ value: JSONValue?) -> String? {
        if let string = value?.string {
            let trimmed = string.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty ? nil : trimmed
        }
        if case .number(let raw)? = value { return Int64(raw).map(String.init) ?? raw }
        return nil
    }

    static func integer(_ value: JSONValue?) -> Int64? {
        if let string = value?.string { return Int64(string.trimmingCharacters(in: .whitespaces)) }
        return value?.truncatedInteger
    }

    /// An amount of money in milliunits (1.99 is 1990), from a number or a decimal string.
    static func milliunits(_ value: JSONValue?) -> Int64? {
        let raw: String
        switch value {
        case .number(let text)?: raw = text
        case .string(let text)?: raw = text.trimmingCharacters(in: .whitespaces)
        default: return nil
        }
        guard let decimal = Decimal(string: raw, locale: Locale(identifier: "en_US_POSIX")), decimal.isFinite,
            decimal >= 0, decimal < 1_000_000_000_000
        else { return nil }
        var scaled = decimal * 1000
        var rounded = Decimal()
        NSDecimalRound(&rounded, &scaled, 0, .plain)
        return Int64(exactly: NSDecimalNumber(decimal: rounded).doubleValue)
    }

    /// An ISO 4217 code, upper-cased; nil for anything else (a virtual currency's SKU).
    static func currency(_ value: JSONValue?) -> String? {
        guard let code = text(value)?.uppercased(), code.count == 3, code.allSatisfy({ $0.isASCII && $0.isLetter })
        else { return nil }
        return code
    }

    /// `2014-09-24T20:38:16+04:00`, with or without fractions, or a bare `2021-10-20` (UTC).
    static func date(_ value: JSONValue?) -> Date? {
        guard let raw = text(value) else { return nil }
        let withFractions = ISO8601DateFormatter()
        withFractions.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plain = ISO8601DateFormatter()
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        let spaced = raw.count == 19 ? raw.replacingOccurrences(of: " ", with: "T") + "Z" : raw
        return plain.date(from: raw) ?? withFractions.date(from: raw) ?? plain.date(from: spaced) ?? day.date(from: raw)
    }

    /// The UTC time the report API is searched with.
    static func reportTime(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    /// `true`, `1` or `"1"`.
    static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .bool(let bool)?: bool
        case .number?: value?.truncatedInteger == 1
        case .string(let text)?: text == "1" || text.lowercased() == "true"
        default: false
        }
    }
}
