import ReceiptCore

/// Amounts as Steam takes and reports them: in hundredths of the currency's unit for every
/// currency, with a minimum step for some (JPY and IDR, among others, are sent in "sen" but must
/// be whole yen or rupiah: increments of 100). From "Supported Currencies"
/// (partner.steamgames.com/doc/store/pricing/currencies), which InitTxn's `amount` refers to.
enum SteamMoney {
    /// The currencies whose amounts must be a multiple of more than one hundredth.
    static let increments: [String: Int64] = [
        "CLP": 100, "COP": 100, "CRC": 500, "IDR": 100, "INR": 100, "JPY": 100, "KRW": 1000, "KZT": 100,
        "TWD": 100, "UAH": 100, "UYU": 100, "VND": 50000,
    ]

    /// The amount Steam takes for `milliunits` of `currency`, or nil when it does not convert
    /// exactly (a fraction of a hundredth, or off the currency's step): refused before Steam is asked.
    static func amount(milliunits: Int64, currency: String) -> Int64? {
        guard milliunits >= 0, milliunits % 10 == 0 else { return nil }
        let amount = milliunits / 10
        guard amount % (increments[currency] ?? 1) == 0 else { return nil }
        return amount
    }

    /// Milliunits of an amount Steam reports.
    static func milliunits(amount: Int64) -> Int64? {
        let (value, overflow) = amount.multipliedReportingOverflow(by: 10)
        return overflow ? nil : value
    }
}
