import Foundation
import Postgres
import ReceiptCore

/// The analytics page's figures: sums over ranges of days of the daily roll-up the ledger's
/// triggers keep (`Migrations+DailyRollup.swift`), so a 90-day page reads a few thousand rows
/// whatever the ledger's size. Reads only, every client's unless a filter names one.
struct AnalyticsQueries: Sendable {
    let pool: PostgresPool

    func report(_ filter: AnalyticsReport.Filter, now: Date) async throws -> AnalyticsReport {
        async let sales = sales(filter)
        async let refunds = refunds(filter)
        async let claims = claims(filter)
        async let subscriptionDays = subscriptionDays(filter)
        async let current = currentSubscriptions(filter, now: now)
        async let verifications = verificationDays(filter)
        async let extra = disputesAndBacklog(filter)
        async let rates = CurrencyRates(pool: pool).summary()
        let (disputes, pending, oldest) = try await extra
        let (delivered, neverClaimed) = try await claims
        let (active, grace) = try await current
        return AnalyticsReport(
            filter: filter, sales: try await sales, refunds: try await refunds, disputes: disputes,
            delivered: delivered, neverClaimed: neverClaimed, subscriptionDays: try await subscriptionDays,
            activeSubscriptions: active, inGrace: grace,
            verificationDays: try await verifications,
            pendingDeliveries: pending, oldestPending: oldest, rates: try await rates)
    }

    /// The range's purchases by day, store, product and currency, with the loaded rate of the
    /// currency on that day (the latest on or before it) applied.
    func sales(_ filter: AnalyticsReport.Filter) async throws -> [AnalyticsReport.Sales] {
        try await pool.query(
            """
            WITH cells AS (
                SELECT day, store, product_id AS product, currency, sum(purchases)::bigint AS purchases,
                       sum(gross_milliunits)::bigint AS milliunits
                FROM ledger_days WHERE \(Self.cellsOf(filter))
                GROUP BY 1, 2, 3, 4 HAVING sum(purchases) <> 0
            )
            SELECT to_char(c.day, 'YYYY-MM-DD') AS day, c.store, c.product, c.currency, c.purchases, c.milliunits,
                   round(c.milliunits * r.rate)::bigint AS converted
            FROM cells c LEFT JOIN LATERAL (
                SELECT rate FROM currency_rates WHERE currency = c.currency AND day <= c.day ORDER BY day DESC LIMIT 1) r ON true
            ORDER BY 1, 2, 3, 4
            """
        ).map { row in
            AnalyticsReport.Sales(
                day: try row.decode("day"), store: try row.decode("store"), product: try row.decode("product"),
                currency: try row.decode("currency"), purchases: try row.decode("purchases"),
                milliunits: try row.decode("milliunits"), converted: try row.decode("converted"))
        }
    }

    /// Refunds dated in the range (whenever the purchase was), per currency: a partial refund
    /// counts its share of the price. A day's refunds of a currency are converted at that day's rate.
    func refunds(_ filter: AnalyticsReport.Filter) async throws -> [AnalyticsReport.Refunds] {
        try await pool.query(
            """
            WITH refunded AS (
                SELECT day, currency, sum(refunds) AS count, sum(refund_milliunits) AS milliunits
                FROM ledger_days WHERE \(Self.cellsOf(filter))
                GROUP BY 1, 2 HAVING sum(refunds) <> 0
            )
            SELECT f.currency, sum(f.count)::bigint AS count, sum(f.milliunits)::bigint AS milliunits,
                   sum(round(f.milliunits * r.rate))::bigint AS converted, bool_and(r.rate IS NOT NULL) AS all_rated
            FROM refunded f LEFT JOIN LATERAL (
                SELECT rate FROM currency_rates WHERE currency = f.currency AND day <= f.day ORDER BY day DESC LIMIT 1) r ON true
            GROUP BY f.currency ORDER BY 3 DESC, 1
            """
        ).map { row in
            let rated: Bool = try row.decode("all_rated")
            return AnalyticsReport.Refunds(
                currency: try row.decode("currency"), count: try row.decode("count"),
                milliunits: try row.decode("milliunits"), converted: rated ? try row.decode("converted") : nil)
        }
    }

    /// The range's purchases a game claimed, and those no game did (known from a store only).
    func claims(_ filter: AnalyticsReport.Filter) async throws -> (delivered: Int, neverClaimed: Int) {
        let row = try await pool.query(
            """
            SELECT COALESCE(sum(delivered), 0)::bigint AS delivered, COALESCE(sum(never_claimed), 0)::bigint AS unclaimed
            FROM ledger_days WHERE \(Self.cellsOf(filter))
            """)[0]
        return (try row.decode("delivered"), try row.decode("unclaimed"))
    }

    /// Per day: subscriptions bought (`new`), periods renewed, subscriptions whose paid time ended
    /// without renewal (`lapsed`, by their end), and periods refunded (by the refund's date).
    func subscriptionDays(_ filter: AnalyticsReport.Filter) async throws -> [AnalyticsReport.DayCount] {
        try await pool.query(
            """
            SELECT to_char(d.day, 'YYYY-MM-DD') AS day, s.series, s.count FROM (
                SELECT day, sum(subscriptions_new)::bigint AS new, sum(subscriptions_renewed)::bigint AS renewed,
                       sum(subscriptions_refunded)::bigint AS refunded, sum(subscriptions_lapsed)::bigint AS lapsed
                FROM ledger_days WHERE \(Self.cellsOf(filter)) GROUP BY day
            ) d CROSS JOIN LATERAL (VALUES ('lapsed', d.lapsed), ('new', d.new), ('refunded', d.refunded), ('renewed', d.renewed))
                AS s(series, count)
            WHERE s.count <> 0 ORDER BY 1, 2
            """
        ).map { row in
            AnalyticsReport.DayCount(
                day: try row.decode("day"), series: try row.decode("series"), count: try row.decode("count"))
        }
    }

    /// The roll-up's cells of the filter's days, environment and client. Days are whole UTC days,
    /// as a filter's bounds are midnights.
    private static func cellsOf(_ filter: AnalyticsReport.Filter) -> PostgresQuery {
        """
        environment = \(filter.environment.rawValue) AND day >= (\(filter.from)::timestamptz AT TIME ZONE 'UTC')::date
          AND day < (\(filter.until)::timestamptz AT TIME ZONE 'UTC')::date
          AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
        """
    }

    /// Subscriptions in a paid period now, and those in a grace period or billing retry.
    func currentSubscriptions(_ filter: AnalyticsReport.Filter, now: Date) async throws -> (active: Int, grace: Int) {
        let row = try await pool.query(
            """
            SELECT count(*) FILTER (WHERE status = 'active' AND (expires_date IS NULL OR expires_date > \(now))) AS active,
                   count(*) FILTER (WHERE status IN ('grace_period', 'billing_retry')) AS grace
            FROM subscriptions
            WHERE environment = \(filter.environment.rawValue) AND status IN ('active', 'grace_period', 'billing_retry')
              AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
            """)[0]
        return (try row.decode("active"), try row.decode("grace"))
    }

    /// Verification attempts by outcome (as `/metrics` names outcomes) and store, per `bucket`
    /// (`day` or `minute`, UTC), between any two times: read from the attempts themselves, for
    /// the overview's last hour and day. Attempts carry no environment: both are counted.
    func verifications(
        from: Date, until: Date, clientID: String?, bucket: String = "day"
    ) async throws -> [(bucket: String, store: String, outcome: String, count: Int)] {
        let format = bucket == "minute" ? "YYYY-MM-DD HH24:MI" : "YYYY-MM-DD"
        return try await pool.query(
            """
            SELECT to_char(date_trunc(\(bucket), created_at AT TIME ZONE 'UTC'), \(format)) AS bucket, COALESCE(store, 'unknown') AS store,
                   \(unescaped: DailyRollupSQL.attemptOutcome) AS outcome, count(*) AS count
            FROM verification_attempts
            WHERE created_at >= \(from) AND created_at < \(until) AND (\(clientID)::text IS NULL OR client_id = \(clientID))
            GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            """
        ).map { row in
            (try row.decode("bucket"), try row.decode("store"), try row.decode("outcome"), try row.decode("count"))
        }
    }

    /// The same per whole UTC day of a filter's range, from the daily roll-up.
    func verificationDays(_ filter: AnalyticsReport.Filter) async throws -> [AnalyticsReport.DayCount] {
        try await pool.query(
            """
            SELECT to_char(day, 'YYYY-MM-DD') AS day, store, outcome, sum(attempts)::bigint AS count
            FROM attempt_days
            WHERE day >= (\(filter.from)::timestamptz AT TIME ZONE 'UTC')::date AND day < (\(filter.until)::timestamptz AT TIME ZONE 'UTC')::date
              AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
            GROUP BY 1, 2, 3 HAVING sum(attempts) <> 0 ORDER BY 1, 2, 3
            """
        ).map { row in
            AnalyticsReport.DayCount(
                day: try row.decode("day"), series: try row.decode("outcome"), count: try row.decode("count"))
        }
    }

    /// Disputes stores opened in the range (each purchase once: its `transaction.disputed`
    /// webhooks, whatever the number of clients told), and the delivery backlog now.
    func disputesAndBacklog(_ filter: AnalyticsReport.Filter) async throws -> (Int, Int, Date?) {
        let row = try await pool.query(
            """
            SELECT (SELECT count(DISTINCT aggregate_key) FROM outbox
                    WHERE event_type = 'transaction.disputed' AND created_at >= \(filter.from) AND created_at < \(filter.until)
                      AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))) AS disputes,
                   (SELECT count(*) FROM outbox WHERE status = 'pending' AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID)))
                       + (SELECT count(*) FROM \(unescaped: OutboxRepository.inFlightRows)
                          WHERE \(filter.clientID)::text IS NULL OR o.client_id = \(filter.clientID)) AS pending,
                   LEAST((SELECT min(created_at) FROM outbox WHERE status = 'pending' AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))),
                         (SELECT min(o.created_at) FROM \(unescaped: OutboxRepository.inFlightRows)
                          WHERE \(filter.clientID)::text IS NULL OR o.client_id = \(filter.clientID))) AS oldest
            """)[0]
        return (try row.decode("disputes"), try row.decode("pending"), try row.decode("oldest"))
    }
}
