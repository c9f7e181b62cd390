import Foundation
import ReceiptCore

/// What the ledger says about a range of days, for one client or all, in one environment: the
/// figures of the console's analytics page and the overview's headline. Days are UTC calendar
/// days written `YYYY-MM-DD`; money is integer milliunits in the purchase's own currency.
struct AnalyticsReport: Sendable {
    /// `from` is the first day's midnight (UTC), `until` the midnight after the last day.
    struct Filter: Sendable, Equatable {
        var from: Date
        var until: Date
        var clientID: String?
        var environment: StoreEnvironment

        /// The last `days` days, today (by `now`) included.
        static func lastDays(
            _ days: Int, now: Date, clientID: String? = nil, environment: StoreEnvironment = .production
        )
            -> Filter
        {
            let today = AnalyticsDays.midnight(of: now)
            return Filter(
                from: today.addingTimeInterval(-Double(days - 1) * 86_400), until: today.addingTimeInterval(86_400),
                clientID: clientID, environment: environment)
        }

        var days: [String] { AnalyticsDays.days(from: from, until: until) }
    }

    /// Purchases of one product in one store and currency on one day.
    struct Sales: Sendable, Equatable {
        let day: String, store: String, product: String, currency: String
        let purchases: Int
        /// Gross: every purchase of the range, later refunds included; purchases without a price add nothing.
        let milliunits: Int64
        /// In the rates' base currency, when a rate of the currency on or before the day was loaded.
        let converted: Int64?
    }

    /// Refunds made in the range (by the refund's date), in one currency.
    struct Refunds: Sendable, Equatable {
        let currency: String, count: Int, milliunits: Int64, converted: Int64?
    }

    /// One day's count of one series (a subscription movement, a verification outcome).
    struct DayCount: Sendable, Equatable {
        let day: String, series: String, count: Int
    }

    /// The rates the operator loaded, as the page names them.
    struct Rates: Sendable, Equatable {
        let base: String, count: Int, currencies: [String], firstDay: String, lastDay: String
    }

    let filter: Filter
    let sales: [Sales]
    let refunds: [Refunds]
    let disputes: Int
    /// Purchases of the range a game has claimed (verified), and those a store told of that no game claimed.
    let delivered: Int, neverClaimed: Int
    /// `new`, `renewed`, `lapsed`, `refunded` per day.
    let subscriptionDays: [DayCount]
    /// Now, whatever the range: subscriptions in a paid period, and in a grace period or billing retry.
    let activeSubscriptions: Int, inGrace: Int
    /// `verified`, `duplicate`, `store_error`, `refused:<REASON>` per day.
    let verificationDays: [DayCount]
    let pendingDeliveries: Int, oldestPending: Date?
    let rates: Rates?

    var purchases: Int { sales.reduce(0) { $0 + $1.purchases } }
    var refundCount: Int { refunds.reduce(0) { $0 + $1.count } }

    /// Gross per currency, largest first.
    var grossByCurrency: [(currency: String, purchases: Int, milliunits: Int64)] {
        Dictionary(grouping: sales, by: \.currency).map { currency, cells in
            (currency, cells.reduce(0) { $0 + $1.purchases }, cells.reduce(Int64(0)) { $0 + $1.milliunits })
        }.sorted { ($0.milliunits, $1.currency) > ($1.milliunits, $0.currency) }
    }

    /// The gross in the base currency, when every priced purchase had a rate.
    var convertedGross: Int64? {
        guard rates != nil else { return nil }
        var total: Int64 = 0
        for cell in sales where cell.milliunits != 0 {
            guard let converted = cell.converted else { return nil }
            total += converted
        }
        return total
    }

    var convertedRefunds: Int64? {
        guard rates != nil else { return nil }
        var total: Int64 = 0
        for refund in refunds where refund.milliunits != 0 {
            guard let converted = refund.converted else { return nil }
            total += converted
        }
        return total
    }

    /// Refunds in the range over purchases in the range; nil without purchases.
    var refundRate: Double? { purchases == 0 ? nil : Double(refundCount) / Double(purchases) }
}

/// UTC calendar days, as the reports name them.
enum AnalyticsDays {
    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        return calendar
    }()

    static func midnight(of date: Date) -> Date { calendar.startOfDay(for: date) }

    static func name(_ date: Date) -> String { String(Timestamps.iso8601(date).prefix(10)) }

    static func days(from: Date, until: Date) -> [String] {
        var names: [String] = []
        var day = midnight(of: from)
        while day < until && names.count < 3_660 {
            names.append(name(day))
            day = day.addingTimeInterval(86_400)
        }
        return names
    }

    /// `YYYY-MM-DD` as that day's midnight, UTC; nil when it is not a date.
    static func parse(_ text: String) -> Date? {
        guard text.utf8.count == 10, text.range(of: #"^\d{4}-\d{2}-\d{2}$"#, options: .regularExpression) != nil
        else { return nil }
        let parts = text.split(separator: "-").compactMap { Int($0) }
        let components = DateComponents(year: parts[0], month: parts[1], day: parts[2])
        guard components.isValidDate(in: calendar), let date = calendar.date(from: components) else { return nil }
        return date
    }
}
