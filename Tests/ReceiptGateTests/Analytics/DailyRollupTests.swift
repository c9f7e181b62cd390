import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The daily roll-up the analytics page reads holds what the ledger's own rows say: for a ledger
/// of purchases, refunds (full, partial, reversed), claims, renewals, lapses and verification
/// attempts across days, clients and environments, written by many connections at once, every
/// figure of the page's queries equals the same figure summed from the raw rows.
@Suite struct DailyRollup {
    static let now = Date(timeIntervalSince1970: 1_795_089_600)  // 2026-11-19T12:00:00Z

    @Test func everyFigureIsTheRawLedgersAfterConcurrentWrites() async throws {
        let harness = try await VerifyHarness.start(now: { Self.now })
        defer { harness.stop() }
        let pool = harness.pool
        var settings = ClientSettings()
        settings.name = "Second game"
        let client = harness.client.clientID
        let other = try await harness.service.clients.create(settings).client.clientID
        try await AnalyticsLedger.seed(pool, client: client, other: other, now: Self.now)
        let rates = try CurrencyRates.parse("2026-01-01,EUR,1.5\n2026-11-16,EUR,2\n2026-01-01,USD,1\n")
        _ = try await CurrencyRates(pool: pool).replace(with: rates, base: "USD")

        // Eight writers at once, each on its own connection, all in the same days' cells: purchases
        // (some never claimed), claims of them, refunds, a refund reversed, renewals, lapses,
        // attempts; some writes many rows in one statement, as the group commit does.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask { try await Self.write(pool, writer: writer, clients: [client, other]) }
            }
            try await group.waitForAll()
        }
        // Retention deletes old attempts; a refund a store reversed is active again.
        try await pool.execute("DELETE FROM verification_attempts WHERE id % 5 = 0")
        try await pool.execute(
            "UPDATE transactions SET state = 'active', revocation_date = NULL WHERE transaction_id LIKE 'w1-%' AND state = 'refunded'"
        )

        let queries = AnalyticsQueries(pool: pool)
        var compared = 0
        for days in [1, 7, 30, 90] {
            for clientID in [nil, client, other] {
                for environment in StoreEnvironment.allCases {
                    let filter = AnalyticsReport.Filter.lastDays(
                        days, now: Self.now, clientID: clientID, environment: environment)
                    let raw = try await RawLedger.figures(pool, filter)
                    let label = "\(days) days, \(clientID ?? "every client"), \(environment)"
                    #expect(try await queries.sales(filter) == raw.sales, "sales: \(label)")
                    #expect(try await queries.refunds(filter) == raw.refunds, "refunds: \(label)")
                    let claims = try await queries.claims(filter)
                    #expect(claims.delivered == raw.delivered && claims.neverClaimed == raw.neverClaimed, "\(label)")
                    #expect(
                        try await queries.subscriptionDays(filter) == raw.subscriptionDays, "subscriptions: \(label)")
                    #expect(try await queries.verificationDays(filter) == raw.verificationDays, "attempts: \(label)")
                    compared += raw.sales.count + raw.refunds.count + raw.subscriptionDays.count
                }
            }
        }
        // The ledger is not empty where compared: every kind of figure is there to be wrong.
        let month: RawLedger.Figures = try await RawLedger.figures(
            pool, AnalyticsReport.Filter.lastDays(30, now: Self.now))
        #expect(month.sales.count > 20 && month.refunds.count == 2 && month.neverClaimed > 5, "\(month.sales.count)")
        #expect(Set(month.subscriptionDays.map { $0.series }) == ["lapsed", "new", "refunded", "renewed"])
        #expect(Set(month.verificationDays.map { $0.series }).isSuperset(of: ["verified", "duplicate", "store_error"]))
        #expect(month.refunds.allSatisfy { $0.converted != nil } && compared > 500)
    }

    /// One writer's statements, each in its own transaction.
    static func write(_ pool: PostgresPool, writer: Int, clients: [String]) async throws {
        for round in 0..<12 {
            let client = clients[(writer + round) % 2], id = "w\(writer)-\(round)"
            let day = now.addingTimeInterval(-Double((writer * 7 + round * 3) % 40) * 86_400)
            let subscription = round % 4 == 0
            try await pool.execute(
                """
                INSERT INTO transactions (store, environment, transaction_id, original_transaction_id, product_id, product_kind,
                    price_milliunits, currency, purchase_date, claimed_at, client_id, player_id)
                SELECT (ARRAY['app_store', 'google_play', 'stripe'])[1 + (g + \(round)) % 3],
                       CASE WHEN g = 5 THEN 'sandbox' ELSE 'production' END, \(id) || '-' || g,
                       CASE WHEN \(subscription) AND g > 1 THEN \(id) || '-1' END,
                       CASE WHEN \(subscription) THEN 'monthly' ELSE 'gems' || (g % 2) END,
                       CASE WHEN \(subscription) THEN 'auto_renewable_subscription' ELSE 'consumable' END,
                       990 * g, CASE WHEN g % 2 = 0 THEN 'EUR' ELSE 'USD' END,
                       \(day)::timestamptz + g * interval '1 hour', CASE WHEN g % 3 <> 0 THEN \(day)::timestamptz END,
                       \(client), 'player-' || g
                FROM generate_series(1, 6) g
                """)
            // A purchase known from a store is claimed later; two are refunded, one of them in part.
            try await pool.execute(
                "UPDATE transactions SET claimed_at = \(now) WHERE transaction_id = \(id + "-3") AND claimed_at IS NULL"
            )
            try await pool.execute(
                """
                UPDATE transactions SET state = 'refunded', revocation_date = purchase_date + interval '2 days',
                    refund_percentage_milliunits = CASE WHEN transaction_id LIKE '%-4' THEN 25000 END
                WHERE transaction_id IN (\(id + "-2"), \(id + "-4"))
                """)
            try await pool.execute(
                """
                INSERT INTO subscriptions (store, environment, original_transaction_id, product_id, status, expires_date,
                    grace_period_expires_date, client_id)
                VALUES ('app_store', 'production', \(id), 'monthly', 'active', \(day), \(round % 3 == 0 ? day + 86_400 : nil),
                        \(client))
                """)
            if round % 2 == 0 {
                try await pool.execute(
                    "UPDATE subscriptions SET status = 'expired' WHERE original_transaction_id = \(id)")
            }
            try await pool.execute(
                """
                INSERT INTO verification_attempts (client_id, store, outcome, duplicate, error_code, error_reason, created_at)
                SELECT \(client), CASE WHEN g = 4 THEN NULL ELSE 'app_store' END,
                       CASE WHEN g <= 2 THEN 'verified' ELSE 'failed' END, g = 2,
                       CASE WHEN g = 3 THEN 'VERIFIER_ERROR' WHEN g > 3 THEN 'INVALID_RECEIPT' END,
                       CASE WHEN g = 5 THEN 'EXPIRED' END, \(day)::timestamptz + g * interval '1 minute'
                FROM generate_series(1, 5) g
                """)
        }
    }
}

/// The page's figures summed from the ledger's own rows, written here without the roll-up.
enum RawLedger {
    struct Figures {
        var sales: [AnalyticsReport.Sales] = []
        var refunds: [AnalyticsReport.Refunds] = []
        var delivered = 0, neverClaimed = 0
        var subscriptionDays: [AnalyticsReport.DayCount] = []
        var verificationDays: [AnalyticsReport.DayCount] = []
    }

    static func figures(_ pool: PostgresPool, _ filter: AnalyticsReport.Filter) async throws -> Figures {
        var figures = Figures()
        let rows: PostgresQuery = """
            SELECT * FROM transactions WHERE environment = \(filter.environment.rawValue)
              AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
            """
        let rate =
            "(SELECT rate FROM currency_rates r WHERE r.currency = c.currency AND r.day <= c.day ORDER BY r.day DESC LIMIT 1)"
        figures.sales = try await pool.query(
            """
            SELECT to_char(day, 'YYYY-MM-DD') AS day, store, product, currency, n, m, round(m * \(unescaped: rate))::bigint AS converted
            FROM (SELECT (purchase_date AT TIME ZONE 'UTC')::date AS day, store, COALESCE(product_id, '') AS product,
                         COALESCE(currency, '') AS currency, count(*) AS n, COALESCE(sum(price_milliunits), 0)::bigint AS m
                  FROM (\(rows)) t WHERE purchase_date >= \(filter.from) AND purchase_date < \(filter.until) GROUP BY 1, 2, 3, 4) c
            ORDER BY 1, 2, 3, 4
            """
        ).map {
            AnalyticsReport.Sales(
                day: try $0.decode("day"), store: try $0.decode("store"), product: try $0.decode("product"),
                currency: try $0.decode("currency"), purchases: try $0.decode("n"), milliunits: try $0.decode("m"),
                converted: try $0.decode("converted"))
        }
        figures.refunds = try await pool.query(
            """
            SELECT currency, sum(n)::bigint AS n, sum(m)::bigint AS m, sum(round(m * \(unescaped: rate)))::bigint AS converted,
                   bool_and(\(unescaped: rate) IS NOT NULL) AS rated
            FROM (SELECT (revocation_date AT TIME ZONE 'UTC')::date AS day, COALESCE(currency, '') AS currency, count(*) AS n,
                         sum(COALESCE(price_milliunits * COALESCE(refund_percentage_milliunits, 100000) / 100000, 0)) AS m
                  FROM (\(rows)) t WHERE state = 'refunded' AND revocation_date >= \(filter.from) AND revocation_date < \(filter.until)
                  GROUP BY 1, 2) c
            GROUP BY currency ORDER BY 3 DESC, 1
            """
        ).map {
            let rated: Bool = try $0.decode("rated")
            return AnalyticsReport.Refunds(
                currency: try $0.decode("currency"), count: try $0.decode("n"), milliunits: try $0.decode("m"),
                converted: rated ? try $0.decode("converted") : nil)
        }
        let claims = try await pool.query(
            """
            SELECT count(*) FILTER (WHERE claimed_at IS NOT NULL) AS delivered, count(*) FILTER (WHERE claimed_at IS NULL) AS unclaimed
            FROM (\(rows)) t WHERE purchase_date >= \(filter.from) AND purchase_date < \(filter.until)
            """)[0]
        figures.delivered = try claims.decode("delivered")
        figures.neverClaimed = try claims.decode("unclaimed")
        figures.subscriptionDays = try await pool.query(
            """
            SELECT to_char(day, 'YYYY-MM-DD') AS day, series, count(*) AS n FROM (
                SELECT (purchase_date AT TIME ZONE 'UTC')::date AS day,
                       CASE WHEN original_transaction_id IS NULL OR original_transaction_id = transaction_id THEN 'new' ELSE 'renewed' END AS series
                FROM (\(rows)) t WHERE purchase_date >= \(filter.from) AND purchase_date < \(filter.until)
                  AND product_kind = 'auto_renewable_subscription'
                UNION ALL
                SELECT (revocation_date AT TIME ZONE 'UTC')::date, 'refunded' FROM (\(rows)) t
                WHERE state = 'refunded' AND revocation_date >= \(filter.from) AND revocation_date < \(filter.until)
                  AND product_kind = 'auto_renewable_subscription'
                UNION ALL
                SELECT (COALESCE(grace_period_expires_date, expires_date) AT TIME ZONE 'UTC')::date, 'lapsed' FROM subscriptions
                WHERE environment = \(filter.environment.rawValue) AND status = 'expired'
                  AND COALESCE(grace_period_expires_date, expires_date) >= \(filter.from)
                  AND COALESCE(grace_period_expires_date, expires_date) < \(filter.until)
                  AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
            ) movements GROUP BY 1, 2 ORDER BY 1, 2
            """
        ).map {
            AnalyticsReport.DayCount(
                day: try $0.decode("day"), series: try $0.decode("series"), count: try $0.decode("n"))
        }
        figures.verificationDays = try await AnalyticsQueries(pool: pool).verifications(
            from: filter.from, until: filter.until, clientID: filter.clientID
        ).map { AnalyticsReport.DayCount(day: $0.bucket, series: $0.outcome, count: $0.count) }
        return figures
    }
}
