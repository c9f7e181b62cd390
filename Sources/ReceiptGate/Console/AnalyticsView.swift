import Foundation

/// The analytics page's parts, drawn from one report: each chart with its numbers beside it, and
/// the headline figures (also the overview's).
struct AnalyticsView {
    let report: AnalyticsReport
    let names: ClientNames

    private var days: [String] { report.filter.days }
    private var xLabels: (first: String, middle: String, last: String) {
        (days.first ?? "", days.count > 2 ? days[days.count / 2] : "", days.last ?? "")
    }

    var rangeSentence: String {
        let client = report.filter.clientID.map { names.names[$0] ?? $0 } ?? "every client"
        return
            "\(days.first ?? "") to \(days.last ?? "") (UTC days, today included), \(report.filter.environment.rawValue), \(client)."
    }

    var ratesSentence: String {
        guard let rates = report.rates else {
            return
                "Money stays in each purchase's currency: no exchange rates are loaded (receiptgate rates set --file rates.csv)."
        }
        return
            "Totals in \(rates.base) use the \(rates.count) rates loaded with receiptgate rates set (\(rates.currencies.joined(separator: ", ")), \(rates.firstDay) to \(rates.lastDay)): each day takes its currency's latest rate on or before it. A purchase in a currency without a rate is left out of the total."
    }

    /// The figures an operator asks first, each findable by its id.
    var headline: HTML {
        let gross = report.grossByCurrency.map { ConsoleText.money($0.milliunits, $0.currency) }
        let refunded = report.refunds.map { ConsoleText.money($0.milliunits, $0.currency) }
        var items: [(String, String, String)] = [
            ("Gross sales", gross.isEmpty ? "none" : gross.joined(separator: " · "), "gross"),
            ("Purchases", String(report.purchases), "purchases"),
            ("Refunds", String(report.refundCount), "refunds"),
            ("Refunded", refunded.isEmpty ? "none" : refunded.joined(separator: " · "), "refunded"),
            ("Refund rate", ConsoleText.percent(report.refundRate), "refund-rate"),
            ("Disputes", String(report.disputes), "disputes"),
            ("Delivered to a game", String(report.delivered), "delivered"),
            ("Known, never claimed", String(report.neverClaimed), "never-claimed"),
            ("Active subscriptions now", String(report.activeSubscriptions), "active-subscriptions"),
            ("In grace or billing retry now", String(report.inGrace), "in-grace"),
            ("Deliveries waiting now", String(report.pendingDeliveries), "deliveries-waiting"),
            ("Oldest waiting since", report.oldestPending.map(ConsoleTime.show) ?? "none", "oldest-waiting"),
        ]
        if let rates = report.rates {
            let total =
                report.convertedGross.map { ConsoleText.money($0, rates.base) } ?? "not every currency has a rate"
            items.insert(("Gross sales in \(rates.base)", total, "gross-converted"), at: 1)
        }
        let cells = items.map { term, value, id -> HTML in "<div><dt>\(term)</dt><dd id=\"\(id)\">\(value)</dd></div>" }
        return "<dl class=\"figures\" id=\"headline\">\(cells)</dl>"
    }

    /// Purchases per day, stacked by store.
    var salesChart: HTML {
        let stores = Set(report.sales.map(\.store)).sorted()
        guard !stores.isEmpty else { return "<p class=\"empty\" id=\"sales-empty\">No purchases in the range.</p>" }
        let index = Dictionary(uniqueKeysWithValues: days.enumerated().map { ($0.element, $0.offset) })
        let perStore = stores.map { store -> (name: String, values: [Int]) in
            var values = [Int](repeating: 0, count: days.count)
            for cell in report.sales where cell.store == store {
                if let at = index[cell.day] { values[at] += cell.purchases }
            }
            return (store, values)
        }
        let kept = ConsoleChart.largest(perStore, kept: Tone.categoryColours.count, other: "other stores")
        let series = zip(kept, Tone.categories(kept.count)).map {
            ConsoleChart.Series(name: $0.0.name, values: $0.0.values, tone: $0.1)
        }
        return ConsoleChart.withTable(
            ConsoleChart.bars(
                id: "sales-chart-svg", title: "Purchases per day, by store", points: days, series: series,
                xLabels: xLabels),
            figureID: "sales-chart", caption: "Purchases per day by store (later refunds included).",
            table: ConsoleChart.table(
                id: "sales-per-day", caption: "Purchases per day by store", pointHeading: "Day", points: days,
                series: series))
    }

    var salesByCurrency: HTML {
        let refunds = Dictionary(uniqueKeysWithValues: report.refunds.map { ($0.currency, $0) })
        let rows = report.grossByCurrency.map { currency, purchases, gross -> HTML in
            let refund = refunds[currency]
            return
                "<tr><td class=\"currency\">\(currency.isEmpty ? "none" : currency)</td><td class=\"count\">\(purchases)</td><td class=\"money\">\(ConsoleText.money(gross, currency))</td><td class=\"count\">\(refund?.count ?? 0)</td><td class=\"money\">\(ConsoleText.money(refund?.milliunits ?? 0, currency))</td><td class=\"money\">\(ConsoleText.money(gross - (refund?.milliunits ?? 0), currency))</td></tr>"
        }
        return ConsoleLayout.table(
            id: "sales-by-currency",
            caption: "Gross sales by currency, and the refunds made in the range (whenever the purchase was)",
            headings: ["Currency", "Purchases", "Gross", "Refunds", "Refunded", "Gross less refunded"], rows: rows,
            empty: "No purchases in the range.")
    }

    var salesByStore: HTML {
        grouped(id: "sales-by-store", caption: "Gross sales by store and currency", by: [\.store])
    }

    var salesByProduct: HTML {
        grouped(
            id: "sales-by-product", caption: "Gross sales by product (the 50 largest)", by: [\.product, \.store],
            limit: 50)
    }

    /// Sales added up by the given keys and currency, largest first.
    private func grouped(
        id: String, caption: String, by keys: [KeyPath<AnalyticsReport.Sales, String>], limit: Int = 500
    ) -> HTML {
        struct Total { var purchases = 0, milliunits: Int64 = 0 }
        var totals: [[String]: Total] = [:]
        for cell in report.sales {
            let key = keys.map { cell[keyPath: $0] } + [cell.currency]
            totals[key, default: Total()].purchases += cell.purchases
            totals[key, default: Total()].milliunits += cell.milliunits
        }
        let ranked = totals.sorted { ($0.value.purchases, $1.key.joined()) > ($1.value.purchases, $0.key.joined()) }
        let rows = ranked.prefix(limit).map { key, total -> HTML in
            let labels = key.dropLast().map { HTML("<td>\($0.isEmpty ? "unknown" : $0)</td>") }
            return
                "<tr>\(Array(labels))<td class=\"currency\">\(key.last ?? "")</td><td class=\"count\">\(total.purchases)</td><td class=\"money\">\(ConsoleText.money(total.milliunits, key.last ?? ""))</td></tr>"
        }
        let headings = keys.count == 1 ? ["Store"] : ["Product", "Store"]
        return ConsoleLayout.table(
            id: id, caption: caption, headings: headings + ["Currency", "Purchases", "Gross"], rows: rows,
            empty: "No purchases in the range.")
    }

    var refundTable: HTML {
        let rows = report.refunds.map { refund -> HTML in
            let converted = report.rates.flatMap { rates in refund.converted.map { ConsoleText.money($0, rates.base) } }
            return
                "<tr><td class=\"currency\">\(refund.currency.isEmpty ? "none" : refund.currency)</td><td class=\"count\">\(refund.count)</td><td class=\"money\">\(ConsoleText.money(refund.milliunits, refund.currency))</td><td class=\"money\">\(converted ?? "")</td></tr>"
        }
        return ConsoleLayout.table(
            id: "refunds-by-currency",
            caption: "Refunds made in the range by currency (a partial refund counts its share)",
            headings: ["Currency", "Refunds", "Refunded", "In the rates' base currency"], rows: rows,
            empty: "No refunds in the range.")
            + "<p class=\"hint\">Disputes opened in the range: \(report.disputes). The refund rate is the range's refunds over its purchases.</p>"
    }

    var subscriptionChart: HTML {
        let movements = ["new", "renewed", "lapsed", "refunded"]
        let tones: [Tone] = [.good, .calm, .warm(1), .warm(0)]
        let series = zip(movements, tones).map { name, tone in
            ConsoleChart.Series(name: name, values: perDay(report.subscriptionDays, series: name), tone: tone)
        }
        return ConsoleChart.withTable(
            ConsoleChart.lines(
                id: "subscriptions-chart-svg", title: "Subscriptions per day: new, renewed, lapsed, refunded",
                series: series, xLabels: xLabels),
            figureID: "subscriptions-chart",
            caption:
                "New subscriptions, renewals, subscriptions that lapsed (by the end of their paid time) and refunded periods, per day.",
            table: ConsoleChart.table(
                id: "subscriptions-per-day", caption: "Subscription movements per day", pointHeading: "Day",
                points: days,
                series: series))
    }

    var verificationChart: HTML {
        let outcomes = Set(report.verificationDays.map(\.series)).sorted {
            Console.outcomeRank($0) < Console.outcomeRank($1)
        }
        guard !outcomes.isEmpty else {
            return "<p class=\"empty\" id=\"verifications-empty\">No verifications in the range.</p>"
        }
        var lines = outcomes.map { (name: $0, values: perDay(report.verificationDays, series: $0)) }
        // The warm family has four colours: the largest three refusals keep theirs, the rest add up.
        let refusals = lines.filter { $0.name.hasPrefix("refused:") }
        if refusals.count > Tone.warmColours.count {
            lines =
                lines.filter { !$0.name.hasPrefix("refused:") }
                + ConsoleChart.largest(refusals, kept: Tone.warmColours.count, other: "refused:other reasons")
        }
        let series = zip(lines, Tone.outcomes(lines.map(\.name))).map { line, tone in
            ConsoleChart.Series(name: line.name, values: line.values, tone: tone)
        }
        return ConsoleChart.withTable(
            ConsoleChart.bars(
                id: "verifications-day-chart-svg", title: "Verifications per day, by outcome", points: days,
                series: series, xLabels: xLabels),
            figureID: "verifications-day-chart",
            caption: "Every verification attempt recorded, by outcome (as /metrics names outcomes), both environments.",
            table: ConsoleChart.table(
                id: "verifications-per-day", caption: "Verifications per day by outcome", pointHeading: "Day",
                points: days, series: series))
    }

    private func perDay(_ counts: [AnalyticsReport.DayCount], series: String) -> [Int] {
        let index = Dictionary(uniqueKeysWithValues: days.enumerated().map { ($0.element, $0.offset) })
        var values = [Int](repeating: 0, count: days.count)
        for count in counts where count.series == series {
            if let at = index[count.day] { values[at] += count.count }
        }
        return values
    }
}
