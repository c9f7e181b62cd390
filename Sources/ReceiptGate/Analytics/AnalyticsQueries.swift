import Foundation
import Postgres
import ReceiptCore

/// The analytics page's figures, read from the ledger: sums over ranges of dates, each from an
/// index (`Migrations+Analytics.swift`). Reads only, every client's unless a filter names one.
struct AnalyticsQueries: Sendable {
    let pool: PostgresPool

    func report(_ filter: AnalyticsReport.Filter, now: Date) async throws -> AnalyticsReport {
        async let sales = sales(filter)
        async let refunds = refunds(filter)
        async let claims = claims(filter)
        async let subscriptionDays = subscriptionDays(filter)
        async let current = currentSubscriptions(filter, now: now)
        async let verifications = verifications(from: filter.from, until: filter.until, clientID: filter.clientID)
        async let extra = disputesAndBacklog(filter)
        async let rates = CurrencyRates(pool: pool).summary()
        let (disputes, pending, oldest) = try await extra
        let (delivered, neverClaimed) = try await claims
        let (active, grace) = try await current
        return AnalyticsReport(
            filter: filter, sales: try await sales, refunds: try await refunds, disputes: disputes,
            delivered: delivered, neverClaimed: neverClaimed, subscriptionDays: try await subscriptionDays,
            activeSubscriptions: active, inGrace: grace,
            verificationDays: try await verifications.map {
                .init(day: $0.bucket, series: $0.outcome, count: $0.count)
            },
            pendingDeliveries: pending, oldestPending: oldest, rates: try await rates)
    }

    /// The range's purchases by day, store, product and currency, with the loaded rate of the
    /// currency on that day (the latest on or before it) applied.
    func sales(_ filter: AnalyticsReport.Filter) async throws -> [AnalyticsReport.Sales] {
        try await pool.query(
            """
            WITH cells AS (
                SELECT (purchase_date AT TIME ZONE 'UTC')::date AS day, store, COALESCE(product_id, '') AS product,
                       COALESCE(currency, '') AS currency, count(*) AS purchases, COALESCE(sum(price_milliunits), 0) AS milliunits
                FROM transactions
                WHERE environment = \(filter.environment.rawValue) AND purchase_date >= \(filter.from) AND purchase_date < \(filter.until)
                  AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
                GROUP BY 1, 2, 3, 4
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
    /// counts its share of the price.
    func refunds(_ filter: AnalyticsReport.Filter) async throws -> [AnalyticsReport.Refunds] {
        try await pool.query(
            """
            WITH refunded AS (
                SELECT (revocation_date AT TIME ZONE 'UTC')::date AS day, COALESCE(currency, '') AS currency,
                       COALESCE(price_milliunits * COALESCE(refund_percentage_milliunits, 100000) / 100000, 0) AS milliunits
                FROM transactions
                WHERE environment = \(filter.environment.rawValue) AND revocation_date >= \(filter.from)
                  AND revocation_date < \(filter.until) AND revocation_date IS NOT NULL AND state = 'refunded'
                  AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
            )
            SELECT f.currency, count(*) AS count, sum(f.milliunits)::bigint AS milliunits,
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
            SELECT count(*) FILTER (WHERE claimed_at IS NOT NULL) AS delivered, count(*) FILTER (WHERE claimed_at IS NULL) AS unclaimed
            FROM transactions
            WHERE environment = \(filter.environment.rawValue) AND purchase_date >= \(filter.from) AND purchase_date < \(filter.until)
              AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
            """)[0]
        return (try row.decode("delivered"), try row.decode("unclaimed"))
    }

    /// Per day: subscriptions bought (`new`), periods renewed, subscriptions whose paid time ended
    /// without renewal (`lapsed`, by their end), and periods refunded (by the refund's date).
    func subscriptionDays(_ filter: AnalyticsReport.Filter) async throws -> [AnalyticsReport.DayCount] {
        let environment = filter.environment.rawValue, kind = ProductKind.autoRenewableSubscription.rawValue
        return try await pool.query(
            """
            SELECT to_char(day, 'YYYY-MM-DD') AS day, series, count(*) AS count FROM (
                SELECT (purchase_date AT TIME ZONE 'UTC')::date AS day,
                       CASE WHEN original_transaction_id IS NULL OR original_transaction_id = transaction_id THEN 'new' ELSE 'renewed' END AS series
                FROM transactions
                WHERE environment = \(environment) AND purchase_date >= \(filter.from) AND purchase_date < \(filter.until)
                  AND product_kind = \(kind) AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
                UNION ALL
                SELECT (revocation_date AT TIME ZONE 'UTC')::date, 'refunded' FROM transactions
                WHERE environment = \(environment) AND revocation_date >= \(filter.from) AND revocation_date < \(filter.until)
                  AND revocation_date IS NOT NULL AND state = 'refunded' AND product_kind = \(kind)
                  AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
                UNION ALL
                SELECT (COALESCE(grace_period_expires_date, expires_date) AT TIME ZONE 'UTC')::date, 'lapsed' FROM subscriptions
                WHERE environment = \(environment) AND status = 'expired'
                  AND COALESCE(grace_period_expires_date, expires_date) >= \(filter.from)
                  AND COALESCE(grace_period_expires_date, expires_date) < \(filter.until)
                  AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))
            ) movements GROUP BY 1, 2 ORDER BY 1, 2
            """
        ).map { row in
            AnalyticsReport.DayCount(
                day: try row.decode("day"), series: try row.decode("series"), count: try row.decode("count"))
        }
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
    /// (`day` or `minute`, UTC). Attempts carry no environment: both are counted.
    func verifications(
        from: Date, until: Date, clientID: String?, bucket: String = "day"
    ) async throws -> [(bucket: String, store: String, outcome: String, count: Int)] {
        let format = bucket == "minute" ? "YYYY-MM-DD HH24:MI" : "YYYY-MM-DD"
        return try await pool.query(
            """
            SELECT to_char(date_trunc(\(bucket), created_at AT TIME ZONE 'UTC'), \(format)) AS bucket, COALESCE(store, 'unknown') AS store,
                   CASE WHEN outcome = 'verified' AND duplicate THEN 'duplicate' WHEN outcome = 'verified' THEN 'verified'
                        WHEN error_code = \(ErrorCode.verifierError.rawValue) THEN 'store_error'
                        ELSE 'refused:' || COALESCE(error_reason, error_code, 'OTHER') END AS outcome,
                   count(*) AS count
            FROM verification_attempts
            WHERE created_at >= \(from) AND created_at < \(until) AND (\(clientID)::text IS NULL OR client_id = \(clientID))
            GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
            """
        ).map { row in
            (try row.decode("bucket"), try row.decode("store"), try row.decode("outcome"), try row.decode("count"))
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
                   (SELECT count(*) FROM outbox WHERE status = 'pending' AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))) AS pending,
                   (SELECT min(created_at) FROM outbox WHERE status = 'pending' AND (\(filter.clientID)::text IS NULL OR client_id = \(filter.clientID))) AS oldest
            """)[0]
        return (try row.decode("disputes"), try row.decode("pending"), try row.decode("oldest"))
    }
}
