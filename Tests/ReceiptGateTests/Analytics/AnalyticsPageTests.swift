import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The analytics page and the overview's headline read the ledger: what they show is what SQL
/// written in the test computes from the same rows, for each range, client and environment; the
/// download holds a row per purchase and one per refund; loaded rates convert the totals.
@Suite struct AnalyticsPage {
    static let token = "analytics-admin-token-0123456789abcdef"
    /// Noon: the seeded refunds of "half a day ago" fall today.
    static let now = Date(timeIntervalSince1970: 1_795_089_600)  // 2026-11-19T12:00:00Z

    struct Fixture {
        let harness: VerifyHarness
        let browser: ConsoleBrowserSession
        let other: String
    }

    static func start() async throws -> Fixture {
        let harness = try await VerifyHarness.start(adminToken: token, now: { now })
        var settings = ClientSettings()
        settings.name = "Second game"
        let other = try await harness.service.clients.create(settings).client.clientID
        try await AnalyticsLedger.seed(harness.pool, client: harness.client.clientID, other: other, now: now)
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: token)
        return Fixture(harness: harness, browser: browser, other: other)
    }

    static func figures(_ html: String) -> [String: String] {
        var found: [String: String] = [:]
        let pattern = #/<dd id="([a-z-]+)">([^<]*)</dd>/#
        for match in html.matches(of: pattern) { found[String(match.1)] = String(match.2) }
        return found
    }

    @Test func theFiguresAreTheLedgersForEachRangeClientAndEnvironment() async throws {
        let fixture = try await Self.start()
        defer { fixture.harness.stop() }
        let client = fixture.harness.client.clientID
        for (query, days, clientID, environment) in [
            ("", 30, nil as String?, "production"), ("?range=7", 7, nil, "production"),
            ("?range=today", 1, nil, "production"), ("?range=90", 90, nil, "production"),
            ("?range=30&client=\(fixture.other)", 30, fixture.other, "production"),
            ("?range=30&client=\(client)", 30, client, "production"),
            ("?range=7&environment=sandbox", 7, nil, "sandbox"),
        ] {
            let page = try await fixture.browser.get("/console/analytics\(query)")
            #expect(page.status == 200, "\(query): \(page.status)")
            let shown = Self.figures(page.text)
            let expected = try await AnalyticsLedger.expected(
                fixture.harness.pool, days: days, now: Self.now, client: clientID, environment: environment)
            for (id, value) in expected {
                #expect(
                    shown[id] == value, "\(query): dd#\(id) shows \(shown[id] ?? "nothing"), the ledger says \(value)")
            }
        }
        // What the seed makes of the default range, so the SQL above cannot agree by being empty.
        let month = Self.figures(try await fixture.browser.get("/console/analytics").text)
        #expect(month["purchases"] == "8" && month["refunds"] == "2" && month["refund-rate"] == "25.0 %")
        #expect(month["gross"] == "19.97 USD · 16.96 EUR", "\(month)")
        #expect(month["never-claimed"] == "1" && month["disputes"] == "1" && month["in-grace"] == "1")

        let overview = try await fixture.browser.get("/console")
        let headline = Self.figures(overview.text)
        let week = Self.figures(try await fixture.browser.get("/console/analytics?range=7").text)
        #expect(week.allSatisfy { headline[$0.key] == $0.value }, "the overview's headline is the last 7 days'")
        #expect(headline["gross"] == "19.97 USD · 13.97 EUR" && headline["active-subscriptions"] == "1", "\(headline)")
        #expect(overview.text.contains(#"<a href="/console/analytics" aria-current"#) == false)
        #expect(overview.text.contains(#"<li><a href="/console/analytics">Analytics</a></li>"#))
    }

    @Test func chartsHaveTheirNumbersAndOutcomesTheirColours() async throws {
        let fixture = try await Self.start()
        defer { fixture.harness.stop() }
        let page = try await fixture.browser.get("/console/analytics?range=7")
        // The verifications table: every outcome the attempts hold, per day.
        let attempts = try await fixture.harness.pool.query(
            """
            SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS n FROM verification_attempts
            WHERE created_at >= \(Self.now.addingTimeInterval(-6 * 86_400 - 43_200)) GROUP BY 1
            """)
        for row in attempts {
            let day: String = try row.decode("day"), count: Int = try row.decode("n")
            #expect(
                page.text.contains("<th scope=\"row\">\(day)</th>")
                    && page.text.contains("<td class=\"count total\">\(count)</td>"), "no row for \(day) with \(count)")
        }
        #expect(page.text.contains(#"class="swatch tone-good"></span>verified"#))
        #expect(page.text.contains(#"class="swatch tone-warm-0"></span>refused:BUNDLE_ID_MISMATCH"#))
        #expect(!page.text.contains(#"tone-good"></span>refused"#))
        #expect(
            page.text.contains(#"<table id="subscriptions-per-day">"#)
                && page.text.contains(#"<table id="sales-per-day">"#))
        #expect(page.text.contains("no exchange rates are loaded"))

        let refused = try await fixture.browser.get("/console/analytics?range=365")
        #expect(refused.status == 400 && refused.text.contains("today, 7, 30 or 90"))
    }

    @Test func theDownloadHasARowPerPurchaseAndPerRefund() async throws {
        let fixture = try await Self.start()
        defer { fixture.harness.stop() }
        let download = try await fixture.browser.get("/console/analytics/export.csv?range=30")
        #expect(download.status == 200 && download.headers["content-type"] == "text/csv; charset=utf-8")
        let lines = download.text.split(separator: "\r\n").map(String.init)
        #expect(lines.first == LedgerExport.header.joined(separator: ","))
        let refunds = lines.filter { $0.hasPrefix("refund,") }, purchases = lines.filter { $0.hasPrefix("purchase,") }
        #expect(purchases.count == 8 && refunds.count == 2, "\(lines)")
        #expect(refunds.contains { $0.contains(",an-1,") && $0.contains(",-4.990,USD,") })
        #expect(refunds.contains { $0.contains(",gp-1,") && $0.contains(",-0.995,EUR,") }, "half of 1.990")
        #expect(purchases.contains { $0.contains(",Second game,other-1,") })
        #expect(!lines.contains { $0.contains("sandbox-1") || $0.contains("an-old") })
    }

    @Test func loadedRatesConvertTheTotals() async throws {
        let fixture = try await Self.start()
        defer { fixture.harness.stop() }
        let rates = try CurrencyRates.parse(
            "date,currency,rate\n# euros\n2026-01-01,EUR,1.5\n2026-11-16,EUR,2\n2026-01-01,USD,1\n")
        #expect(try await CurrencyRates(pool: fixture.harness.pool).replace(with: rates, base: "USD") == 3)
        let page = try await fixture.browser.get("/console/analytics")
        let expected = try await fixture.harness.pool.query(
            """
            SELECT sum(round(t.price_milliunits * (SELECT rate FROM currency_rates r WHERE r.currency = t.currency
                       AND r.day <= (t.purchase_date AT TIME ZONE 'UTC')::date ORDER BY r.day DESC LIMIT 1)))::bigint AS total
            FROM transactions t WHERE environment = 'production' AND purchase_date >= \(Self.now.addingTimeInterval(-29.5 * 86_400))
            """)[0].decode("total", as: Int64.self)
        #expect(Self.figures(page.text)["gross-converted"] == ConsoleText.money(expected, "USD"))
        // Dollars at 1; euros at 2 from 16 November (gp-1, other-1), at 1.5 before (gp-2, sub-1, sub-2).
        #expect(expected == 4_990 * 2 + 9_990 + (1_990 + 7_000) * 2 + (1_990 + 2_990 * 2) * 3 / 2)
        #expect(page.text.contains("Totals in USD use the 3 rates loaded"))

        for (file, problem) in [
            ("2026-13-01,EUR,1", "not a date"), ("2026-01-01,EURO,1", "currency"), ("2026-01-01,EUR,-1", "positive"),
            ("2026-01-01,EUR,1\n2026-01-01,EUR,2", "second rate"), ("", "no rate"),
        ] {
            #expect(throws: CurrencyRates.FileError.self, "\(problem)") { try CurrencyRates.parse(file) }
        }
    }
}
