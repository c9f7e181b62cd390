import Foundation
import HTTPServer
import ReceiptCore

/// The analytics page: what the ledger says about a range of days (sales, refunds, subscriptions,
/// verifications, the delivery backlog), from Postgres, so every process shows the same figures.
extension Console {
    /// The ranges the page offers: a query value, its label and its number of days (today included).
    static let analyticsRanges: [(value: String, label: String, days: Int)] = [
        ("today", "Today", 1), ("7", "Last 7 days", 7), ("30", "Last 30 days", 30), ("90", "Last 90 days", 90),
    ]

    func registerAnalytics(on router: inout Router) {
        page(&router, "/console/analytics") { request, session in try await analytics(request, session) }
        page(&router, "/console/analytics/export.csv") { request, session in try await analyticsExport(request, session)
        }
    }

    /// What the query asks for, or why it cannot be read.
    struct AnalyticsChoice {
        var range = "30", clientID: String?, environment = StoreEnvironment.production

        init(_ request: HTTPRequest) throws(ChoiceError) {
            if let range = request.query["range"], !range.isEmpty {
                guard Console.analyticsRanges.contains(where: { $0.value == range }) else {
                    throw ChoiceError(message: "The range must be today, 7, 30 or 90 days.")
                }
                self.range = range
            }
            if let client = request.query["client"], !client.isEmpty {
                guard Identifier.problem(client) == nil else {
                    throw ChoiceError(message: "The client filter holds a character it may not.")
                }
                clientID = client
            }
            if let environment = request.query["environment"], !environment.isEmpty {
                guard let known = StoreEnvironment(rawValue: environment) else {
                    throw ChoiceError(message: "The environment must be production or sandbox.")
                }
                self.environment = known
            }
        }

        var days: Int { Console.analyticsRanges.first { $0.value == range }?.days ?? 30 }

        var query: String {
            "range=\(range)&environment=\(environment.rawValue)"
                + (clientID.map { "&client=\(HTML.component($0))" } ?? "")
        }

        func filter(now: Date) -> AnalyticsReport.Filter {
            .lastDays(days, now: now, clientID: clientID, environment: environment)
        }
    }

    struct ChoiceError: Error { let message: String }

    func analytics(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let choice: AnalyticsChoice
        do {
            choice = try AnalyticsChoice(request)
        } catch {
            return ConsoleLayout.page(
                "Analytics", session: session, section: "Analytics", error: error.message, status: 400,
                "<h1>Analytics</h1><p><a href=\"/console/analytics\">The last 30 days</a></p>")
        }
        let everyClient = try await clients.list()
        let names = ClientNames(everyClient)
        let report = try await AnalyticsQueries(pool: queries.pool).report(choice.filter(now: now()), now: now())
        let view = AnalyticsView(report: report, names: names)
        return ConsoleLayout.page(
            "Analytics", session: session, section: "Analytics",
            """
            <h1>Analytics</h1>
            \(analyticsFilters(choice, clients: everyClient))
            <p class="hint" id="analytics-range">\(view.rangeSentence) <a id="analytics-download" href="/console/analytics/export.csv?\(choice.query)">Download the range's purchases and refunds (CSV)</a></p>
            <p class="hint" id="rates-used">\(view.ratesSentence)</p>
            \(view.headline)
            <h2>Sales</h2>
            \(view.salesChart)
            \(view.salesByCurrency)
            \(view.salesByStore)
            \(view.salesByProduct)
            <h2>Refunds and disputes</h2>
            \(view.refundTable)
            <h2>Subscriptions</h2>
            \(view.subscriptionChart)
            <h2>Verifications</h2>
            \(view.verificationChart)
            """)
    }

    private func analyticsFilters(_ choice: AnalyticsChoice, clients: [Client]) -> HTML {
        func option(_ value: String, _ label: String, selected: Bool) -> HTML {
            "<option value=\"\(value)\"\(HTML(markup: selected ? " selected" : ""))>\(label)</option>"
        }
        let ranges = Self.analyticsRanges.map { option($0.value, $0.label, selected: $0.value == choice.range) }
        let clientOptions =
            [option("", "Every client", selected: choice.clientID == nil)]
            + clients.map { option($0.clientID, $0.name, selected: $0.clientID == choice.clientID) }
        let environments = StoreEnvironment.allCases.map {
            option($0.rawValue, $0.rawValue, selected: $0 == choice.environment)
        }
        return """
            <form method="get" action="/console/analytics" class="filters">
            <div><label for="range">Range</label> <select id="range" name="range">\(ranges)</select></div>
            <div><label for="client">Client</label> <select id="client" name="client">\(clientOptions)</select></div>
            <div><label for="environment">Environment</label> <select id="environment" name="environment">\(environments)</select></div>
            <div><button type="submit">Show</button></div></form>
            """
    }

    /// The range's purchases and refunds as CSV, streamed as the export's cursor reads them (the
    /// same export as `receiptgate export transactions`): any number of rows, a buffer's worth in memory.
    func analyticsExport(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        guard let choice = try? AnalyticsChoice(request) else {
            return ConsoleLayout.page(
                "Analytics", session: session, section: "Analytics",
                error: "The download's filter is not one the page offers.",
                status: 400, "<h1>Analytics</h1>")
        }
        let filter = choice.filter(now: now())
        let export = LedgerExport(pool: queries.pool)
        let range = LedgerExport.Range(
            since: filter.from, until: filter.until, clientID: filter.clientID, environment: filter.environment)
        let name = "receiptgate-\(filter.environment.rawValue)-\(AnalyticsDays.name(filter.from))-\(choice.days)d.csv"
        var response = HTTPResponse(status: 200)
        response.stream = HTTPBodyStream { stream in
            _ = try await export.write(range) { text in try stream.write(text) }
        }
        response.headers.add("Content-Type", "text/csv; charset=utf-8")
        response.headers.add("Content-Disposition", "attachment; filename=\"\(name)\"")
        for (header, value) in ConsoleLayout.securityHeaders { response.headers.add(header, value) }
        return response
    }
}
