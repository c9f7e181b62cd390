import Foundation
import Postgres
import TestSupport
import Testing

@testable import ReceiptGate

/// The analytics page's download is streamed from the export's cursor: a range of many more rows
/// than one batch of the cursor arrives whole, chunked, every purchase and refund once, in order.
@Suite struct AnalyticsDownload {
    @Test func aRangeOfManyBatchesArrivesWholeAndStreamed() async throws {
        let now = AnalyticsPage.now
        let harness = try await VerifyHarness.start(adminToken: AnalyticsPage.token, now: { now })
        defer { harness.stop() }
        let client = harness.client.clientID
        // Five times the cursor's batch of purchases over the month, one in ten refunded.
        let purchases = LedgerExport.batchSize * 5
        try await harness.pool.execute(
            """
            INSERT INTO transactions (store, environment, transaction_id, product_id, product_kind, price_milliunits, currency,
                purchase_date, claimed_at, client_id, player_id, storefront, state, revocation_date)
            SELECT 'app_store', 'production', 'dl-' || g, 'gems', 'consumable', 990 + g, 'USD', t, t, \(client), 'player-' || g, 'USA',
                   CASE WHEN g % 10 = 0 THEN 'refunded' ELSE 'active' END, CASE WHEN g % 10 = 0 THEN t + interval '1 hour' END
            FROM generate_series(1, \(purchases)) g,
                 LATERAL (SELECT \(now)::timestamptz - interval '20 days' + g * (interval '19 days' / \(purchases))) x(t)
            """)
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: AnalyticsPage.token)
        let download = try await browser.get("/console/analytics/export.csv?range=30")
        #expect(download.status == 200 && download.headers["transfer-encoding"]?.lowercased() == "chunked")
        #expect(download.headers["content-type"] == "text/csv; charset=utf-8")
        #expect(
            download.headers["content-disposition"]?.hasPrefix("attachment; filename=\"receiptgate-production-") == true
        )
        let lines = download.text.split(separator: "\r\n").map(String.init)
        #expect(lines.first == LedgerExport.header.joined(separator: ","))

        // Every row the ledger holds for the range, in the export's order, and nothing else.
        let expected = try await harness.pool.query(
            """
            SELECT type, transaction_id, amount FROM (
                SELECT 'purchase' AS type, purchase_date AS at, id, transaction_id, price_milliunits AS amount FROM transactions
                WHERE purchase_date >= \(now)::timestamptz - interval '30 days'
                UNION ALL
                SELECT 'refund', revocation_date, id, transaction_id, -price_milliunits FROM transactions WHERE state = 'refunded'
            ) x ORDER BY at, id, type
            """
        ).map { row in
            "\(try row.decode("type", as: String.self)) \(try row.decode("transaction_id", as: String.self)) "
                + LedgerExport.decimal(try row.decode("amount", as: Int64.self))
        }
        let shown = lines.dropFirst().map { line in
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            return fields.count == LedgerExport.header.count ? "\(fields[0]) \(fields[6]) \(fields[13])" : line
        }
        #expect(expected.count == purchases + purchases / 10)
        #expect(shown.count == expected.count, "\(shown.count) rows downloaded of \(expected.count)")
        #expect(
            shown == expected, "first difference: \(zip(shown, expected).first { $0 != $1 }.map { "\($0)" } ?? "none")")
    }
}
