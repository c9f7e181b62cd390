import Postgres

extension Schema {
    static let consumptionMigrations: [Migration] = [
        // A consumption report's own time (epoch ms): the game's `reported_at_ms`, or the signed
        // X-Timestamp of the request that carried it. A report replaces the stored one only when its
        // time is later, so a replayed or delayed older report never overwrites a newer one.
        // Reports stored before had no time of their own: the time they were received stands in.
        Migration(
            version: 25, name: "consumption_report_order",
            sql: """
                ALTER TABLE consumption_reports ADD COLUMN as_of_ms bigint;
                UPDATE consumption_reports SET as_of_ms = floor(extract(epoch FROM reported_at) * 1000)::bigint;
                ALTER TABLE consumption_reports ALTER COLUMN as_of_ms SET NOT NULL;
                -- A process of the version before, still running during a rolling upgrade, writes no time: now stands in.
                ALTER TABLE consumption_reports ALTER COLUMN as_of_ms SET DEFAULT floor(extract(epoch FROM now()) * 1000)::bigint;
                """)
    ]
}
