import Foundation

/// Stripe's amounts are integers in the currency's minor unit as Stripe defines it ("Supported
/// currencies", minor units in API amounts): none for its zero-decimal currencies, thousandths
/// for its three-decimal ones, hundredths for every other (ISK, HUF and TWD included, which
/// Stripe writes with two decimals though they have none in use). The ledger keeps milliunits.
enum StripeMoney {
    static let zeroDecimal: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF",
    ]
    static let threeDecimal: Set<String> = ["BHD", "JOD", "KWD", "OMR", "TND"]

    /// Milliunits per minor unit of `currency` (upper case).
    static func milliunitsPerMinorUnit(_ currency: String) -> Int64 {
        if zeroDecimal.contains(currency) { return 1000 }
        if threeDecimal.contains(currency) { return 1 }
        return 10
    }

    /// `amount` minor units of `currency` in milliunits; nil when it would not fit.
    static func milliunits(_ amount: Int64, currency: String) -> Int64? {
        let (value, overflow) = amount.multipliedReportingOverflow(by: milliunitsPerMinorUnit(currency))
        return overflow ? nil : value
    }

    /// A decimal amount of minor units (`unit_amount_decimal`, up to 12 decimals) in milliunits,
    /// rounded to the nearest.
    static func milliunits(decimal text: String, currency: String) -> Int64? {
        guard let minor = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), minor >= 0 else {
            return nil
        }
        var scaled = minor * Decimal(milliunitsPerMinorUnit(currency)), rounded = Decimal()
        NSDecimalRound(&rounded, &scaled, 0, .plain)
        guard rounded < Decimal(Int64.max) else { return nil }
        return NSDecimalNumber(decimal: rounded).int64Value
    }

    /// Stripe writes currencies in lower case; the ledger keeps ISO 4217's upper case.
    static func currency(_ raw: String?) -> String? {
        guard let raw, raw.count == 3, raw.allSatisfy({ $0.isASCII && $0.isLetter }) else { return nil }
        return raw.uppercased()
    }
}
