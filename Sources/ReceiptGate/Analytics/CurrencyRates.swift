package import Foundation
package import Postgres

/// Exchange rates the operator loads (`receiptgate rates set --file`), for the analytics page to
/// add up sales made in several currencies. Nothing is fetched from outside: without rates, money
/// stays in its own currency.
package struct CurrencyRates: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) { self.pool = pool }

    /// One line of a rates file: from `day` on, one unit of `currency` is worth `rate` of the base.
    package struct Rate: Sendable, Equatable {
        package let day: String, currency: String, rate: String
    }

    package struct FileError: Error, CustomStringConvertible {
        package let description: String
    }

    static let maximumLines = 200_000

    /// Reads `date,currency,rate` lines (`2026-11-30,EUR,1.0842`); blank lines, `#` comments and
    /// a `date,currency,rate` header are skipped. A wrong line is refused with its number.
    package static func parse(_ text: String) throws -> [Rate] {
        var rates: [Rate] = []
        var seen: Set<String> = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || line.lowercased().hasPrefix("date,") { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            let number = index + 1
            guard fields.count == 3 else {
                throw FileError(description: "line \(number): expected date,currency,rate, got \"\(line.prefix(80))\"")
            }
            guard AnalyticsDays.parse(fields[0]) != nil else {
                throw FileError(description: "line \(number): \"\(fields[0].prefix(40))\" is not a date (YYYY-MM-DD)")
            }
            let currency = fields[1].uppercased()
            guard currency.range(of: "^[A-Z]{3}$", options: .regularExpression) != nil else {
                throw FileError(
                    description: "line \(number): \"\(fields[1].prefix(40))\" is not an ISO 4217 currency code")
            }
            guard fields[2].range(of: #"^\d{1,12}(\.\d{1,12})?$"#, options: .regularExpression) != nil,
                let value = Double(fields[2]), value > 0
            else {
                throw FileError(description: "line \(number): \"\(fields[2].prefix(40))\" is not a positive rate")
            }
            guard seen.insert("\(currency) \(fields[0])").inserted else {
                throw FileError(description: "line \(number): a second rate of \(currency) on \(fields[0])")
            }
            rates.append(Rate(day: fields[0], currency: currency, rate: fields[2]))
            guard rates.count <= maximumLines else {
                throw FileError(description: "more than \(maximumLines) rates in one file")
            }
        }
        guard !rates.isEmpty else { throw FileError(description: "the file holds no rate") }
        return rates
    }

    /// Replaces every loaded rate with these, in `base`, in one transaction: the page never adds
    /// up with half of one file and half of another. How many were loaded.
    package func replace(with rates: [Rate], base: String) async throws -> Int {
        let days = rates.map(\.day), currencies = rates.map(\.currency), values = rates.map(\.rate)
        return try await pool.withTransaction { connection in
            try connection.execute("DELETE FROM currency_rates")
            return try connection.execute(
                """
                INSERT INTO currency_rates (currency, day, base, rate)
                SELECT currency, day, \(base), rate FROM unnest(\(currencies)::text[], \(days)::date[], \(values)::numeric[])
                    AS r(currency, day, rate)
                """)
        }
    }

    /// What is loaded: nil when nothing is.
    func summary() async throws -> AnalyticsReport.Rates? {
        let row = try await pool.query(
            """
            SELECT min(base) AS base, count(*) AS count, string_agg(DISTINCT currency, ',') AS currencies,
                   to_char(min(day), 'YYYY-MM-DD') AS first_day, to_char(max(day), 'YYYY-MM-DD') AS last_day
            FROM currency_rates
            """)[0]
        guard let base: String = try row.decode("base") else { return nil }
        let currencies: String = try row.decode("currencies")
        return AnalyticsReport.Rates(
            base: base, count: try row.decode("count"), currencies: currencies.split(separator: ",").map(String.init),
            firstDay: try row.decode("first_day"), lastDay: try row.decode("last_day"))
    }
}
