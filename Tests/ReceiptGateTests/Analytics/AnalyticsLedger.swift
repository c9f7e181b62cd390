import Foundation
import Postgres
import Testing

/// A ledger for the analytics page, written as the service writes its rows: purchases in three
/// stores and two currencies, a full and a partial refund, a purchase no game claimed, a
/// subscription bought and renewed, one lapsed and one in grace, verification attempts of every
/// kind, a dispute, another client's purchase, a sandbox purchase and one older than 30 days.
/// And the figures the page must show, computed here in SQL of the test's own.
enum AnalyticsLedger {
    /// `attempts`: also verification attempts (not where a test compares the attempts with /metrics).
    static func seed(_ pool: PostgresPool, client: String, other: String, now: Date, attempts: Bool = true) async throws
    {
        let day = { (days: Double) in now.addingTimeInterval(-days * 86_400) }
        // store, environment, id, original, product, kind, price, currency, purchased, claimed, client
        let purchases: [(String, String, String, String?, String, String, Int64, String, Date, Bool, String)] = [
            ("app_store", "production", "an-1", nil, "gems100", "consumable", 4_990, "USD", day(1), true, client),
            ("app_store", "production", "an-2", nil, "gems100", "consumable", 4_990, "USD", day(3), true, client),
            ("app_store", "production", "an-old", nil, "gems100", "consumable", 4_990, "USD", day(40), true, client),
            ("google_play", "production", "gp-1", nil, "gems500", "consumable", 1_990, "EUR", day(2), true, client),
            ("google_play", "production", "gp-2", nil, "gems500", "consumable", 1_990, "EUR", day(6), true, client),
            ("stripe", "production", "st-1", nil, "starter", "non_consumable", 9_990, "USD", day(0), false, client),
            (
                "app_store", "production", "sub-1", "sub-1", "monthly", "auto_renewable_subscription", 2_990, "EUR",
                day(20), true, client
            ),
            (
                "app_store", "production", "sub-2", "sub-1", "monthly", "auto_renewable_subscription", 2_990, "EUR",
                day(5), true, client
            ),
            ("app_store", "production", "other-1", nil, "gems100", "consumable", 7_000, "EUR", day(2), true, other),
            ("app_store", "sandbox", "sandbox-1", nil, "gems100", "consumable", 4_990, "USD", day(1), true, client),
        ]
        for p in purchases {
            try await pool.execute(
                """
                INSERT INTO transactions (store, environment, transaction_id, original_transaction_id, product_id, product_kind,
                    price_milliunits, currency, purchase_date, claimed_at, client_id, player_id, storefront)
                VALUES (\(p.0), \(p.1), \(p.2), \(p.3), \(p.4), \(p.5), \(p.6), \(p.7), \(p.8), \(p.9 ? p.8 : nil), \(p.10),
                        \("player-" + p.2), \("USA"))
                """)
        }
        // A full refund yesterday, a half refund two days ago (of a purchase made then).
        try await pool.execute(
            "UPDATE transactions SET state = 'refunded', revocation_date = \(day(0.5)) WHERE transaction_id = 'an-1'")
        try await pool.execute(
            """
            UPDATE transactions SET state = 'refunded', revocation_date = \(day(1.5)), refund_partial = true,
                refund_percentage_milliunits = 50000 WHERE transaction_id = 'gp-1'
            """)
        for (original, status, expires, grace) in [
            ("sub-1", "active", now.addingTimeInterval(25 * 86_400), nil as Date?),
            ("lapsed-1", "expired", day(3), nil), ("grace-1", "grace_period", day(1), now.addingTimeInterval(86_400)),
        ] {
            try await pool.execute(
                """
                INSERT INTO subscriptions (store, environment, original_transaction_id, product_id, status, expires_date,
                    grace_period_expires_date, client_id)
                VALUES ('app_store', 'production', \(original), 'monthly', \(status), \(expires), \(grace), \(client))
                """)
        }
        for (outcome, duplicate, reason, at) in !attempts
            ? []
            : [
                ("verified", false, nil as String?, day(1)), ("verified", false, nil, day(1)),
                ("verified", true, nil, day(2)),
                ("failed", false, "BUNDLE_ID_MISMATCH", day(2)), ("failed", false, "EXPIRED", day(0)),
            ]
        {
            try await pool.execute(
                """
                INSERT INTO verification_attempts (client_id, store, outcome, duplicate, error_code, error_reason, created_at)
                VALUES (\(client), 'app_store', \(outcome), \(outcome == "verified" ? duplicate : nil),
                        \(reason == nil ? nil : "INVALID_RECEIPT"), \(reason), \(at))
                """)
        }
        try await pool.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, payload, status, created_at, delivered_at)
            VALUES (gen_random_uuid(), \(client), 'transaction.disputed', 'stripe:st-1', '{}', 'delivered', \(day(0)), \(day(0)))
            """)
    }

    /// Rows of the last `days` days' export: the production purchases and refunds of every client.
    static func exportRows(_ pool: PostgresPool, days: Int, now: Date) async throws -> Int {
        let today = Calendar.utc.startOfDay(for: now)
        let from = today.addingTimeInterval(-Double(days - 1) * 86_400), until = today.addingTimeInterval(86_400)
        return try await pool.query(
            """
            SELECT (SELECT count(*) FROM transactions WHERE environment = 'production' AND purchase_date >= \(from) AND purchase_date < \(until))
                 + (SELECT count(*) FROM transactions WHERE environment = 'production' AND state = 'refunded'
                    AND revocation_date >= \(from) AND revocation_date < \(until)) AS rows
            """)[0].decode("rows", as: Int.self)
    }

    /// The figures of the last `days` days (today included) as the page writes them, by SQL
    /// written here: each key is the id of the `dd` that shows it.
    static func expected(
        _ pool: PostgresPool, days: Int, now: Date, client: String? = nil, environment: String = "production"
    ) async throws -> [String: String] {
        let today = Calendar.utc.startOfDay(for: now)
        let from = today.addingTimeInterval(-Double(days - 1) * 86_400), until = today.addingTimeInterval(86_400)
        let rows = try await pool.query(
            """
            WITH r AS (SELECT * FROM transactions WHERE environment = \(environment) AND (\(client)::text IS NULL OR client_id = \(client))),
            bought AS (SELECT * FROM r WHERE purchase_date >= \(from) AND purchase_date < \(until)),
            refunded AS (SELECT * FROM r WHERE state = 'refunded' AND revocation_date >= \(from) AND revocation_date < \(until)),
            money AS (SELECT currency, sum(price_milliunits) AS total FROM bought GROUP BY currency),
            back AS (SELECT currency, sum(price_milliunits * COALESCE(refund_percentage_milliunits, 100000) / 100000) AS total
                     FROM refunded GROUP BY currency)
            SELECT (SELECT string_agg(to_char(round(total / 1000.0, 2), 'FM999999990.00') || ' ' || currency, ' · ' ORDER BY total DESC, currency) FROM money) AS gross,
                   (SELECT count(*) FROM bought)::text AS purchases,
                   (SELECT count(*) FROM refunded)::text AS refunds,
                   (SELECT string_agg(to_char(round(total / 1000.0, 2), 'FM999999990.00') || ' ' || currency, ' · ' ORDER BY total DESC, currency) FROM back) AS refunded,
                   (SELECT to_char(round((SELECT count(*) FROM refunded) * 100.0 / NULLIF((SELECT count(*) FROM bought), 0), 1), 'FM990.0') || ' %') AS refund_rate,
                   (SELECT count(*) FROM bought WHERE claimed_at IS NOT NULL)::text AS delivered,
                   (SELECT count(*) FROM bought WHERE claimed_at IS NULL)::text AS never_claimed,
                   (SELECT count(*) FROM subscriptions WHERE environment = \(environment) AND status = 'active' AND expires_date > \(now)
                      AND (\(client)::text IS NULL OR client_id = \(client)))::text AS active_subscriptions,
                   (SELECT count(*) FROM subscriptions WHERE environment = \(environment) AND status IN ('grace_period', 'billing_retry')
                      AND (\(client)::text IS NULL OR client_id = \(client)))::text AS in_grace,
                   (SELECT count(DISTINCT aggregate_key) FROM outbox WHERE event_type = 'transaction.disputed'
                      AND created_at >= \(from) AND created_at < \(until) AND (\(client)::text IS NULL OR client_id = \(client)))::text AS disputes
            """)
        let row = try #require(rows.first)
        var figures: [String: String] = [:]
        for column in [
            "gross", "purchases", "refunds", "refunded", "refund_rate", "delivered", "never_claimed",
            "active_subscriptions", "in_grace", "disputes",
        ] {
            figures[column.replacingOccurrences(of: "_", with: "-")] =
                try row.decode(column, as: String?.self) ?? "none"
        }
        return figures
    }
}

extension Calendar {
    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .gmt
        return calendar
    }()
}
