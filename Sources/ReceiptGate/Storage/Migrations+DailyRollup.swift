import Postgres
import ReceiptCore

extension Schema {
    // The analytics page's daily roll-up, kept by the database itself: statement triggers on the
    // ledger's tables add what each statement changed, in the statement's own transaction, so every
    // writer (the verify path's group commit, store notifications, claims, polls, a hand-run SQL
    // fix) keeps it true and a rolled-back write leaves no trace. A statement adds once per
    // roll-up row it touches, whatever its number of ledger rows: the group commit's batch of
    // purchases is one upsert per day, client, store, product and currency. An update adds its
    // rows' new contribution and takes away their old one, so an update that changes nothing the
    // page counts (a poll's bookkeeping) writes nothing. Upserts add (`x = x + EXCLUDED.x`): two
    // writers never read and write back. Each connection adds to a row of its own per cell (its
    // backend's process id is the `shard`), so concurrent verifications of one product never wait
    // on one another's row lock until commit, and no two transactions can deadlock on the
    // roll-up; the page sums a cell's rows (as many as connections that wrote it that day). Half of
    // each page is left free, so the many updates of today's rows stay on their page (HOT).
    // Existing rows are filled here, in the migration's transaction: the triggers' table locks
    // hold writers back until it commits (38 s for 10 million transactions and 20 million
    // attempts, docs/benchmarks.md). Disputes stay counted from the outbox, through a partial index
    // of its few `transaction.disputed` rows; the overview's refunds of the last 24 hours through
    // one of the refunded transactions (it read every transaction).
    static let dailyRollupMigrations: [Migration] = [
        Migration(
            version: 35, name: "daily_rollup",
            sql: """
                CREATE TABLE ledger_days (
                    environment text NOT NULL,
                    day date NOT NULL,
                    client_id text NOT NULL,
                    store text NOT NULL,
                    product_id text NOT NULL,
                    currency text NOT NULL,
                    shard integer NOT NULL,
                    \(DailyRollupSQL.ledgerCounters.map { "\($0) bigint NOT NULL DEFAULT 0," }.joined(separator: "\n    "))
                    PRIMARY KEY (environment, day, client_id, store, product_id, currency, shard)
                ) WITH (fillfactor = 50);
                CREATE TABLE attempt_days (
                    day date NOT NULL,
                    client_id text NOT NULL,
                    store text NOT NULL,
                    outcome text NOT NULL,
                    shard integer NOT NULL,
                    attempts bigint NOT NULL DEFAULT 0,
                    PRIMARY KEY (day, client_id, store, outcome, shard)
                ) WITH (fillfactor = 50);
                CREATE INDEX outbox_disputes ON outbox (created_at) WHERE event_type = 'transaction.disputed';
                CREATE INDEX transactions_refunded_recently ON transactions (updated_at) WHERE state = 'refunded';
                \(DailyRollupSQL.triggers)
                \(DailyRollupSQL.backfill)
                """)
    ]
}

/// The roll-up's SQL, written once per table: what one ledger row adds to the daily cells.
enum DailyRollupSQL {
    static let ledgerCounters = [
        "purchases", "gross_milliunits", "delivered", "never_claimed", "refunds", "refund_milliunits",
        "subscriptions_new", "subscriptions_renewed", "subscriptions_refunded", "subscriptions_lapsed",
    ]
    static let ledgerKey = ["environment", "day", "client_id", "store", "product_id", "currency"]
    static let attemptKey = ["day", "client_id", "store", "outcome"]

    private static let subscription = "COALESCE(product_kind = 'auto_renewable_subscription', false)"
    private static let firstPeriod = "(original_transaction_id IS NULL OR original_transaction_id = transaction_id)"

    /// One line per cell a `transactions` row counts in, each counter times `sign`: its purchase
    /// day (sales, claims, subscriptions bought or renewed) and, once refunded, its refund's day.
    static func transactionCells(_ rows: String, sign: String) -> String {
        """
        SELECT environment, (purchase_date AT TIME ZONE 'UTC')::date AS day, client_id, store,
               COALESCE(product_id, '') AS product_id, COALESCE(currency, '') AS currency,
               \(sign) AS purchases, \(sign) * COALESCE(price_milliunits, 0) AS gross_milliunits,
               \(sign) * (claimed_at IS NOT NULL)::int AS delivered, \(sign) * (claimed_at IS NULL)::int AS never_claimed,
               0 AS refunds, 0 AS refund_milliunits,
               \(sign) * (\(subscription) AND \(firstPeriod))::int AS subscriptions_new,
               \(sign) * (\(subscription) AND NOT \(firstPeriod))::int AS subscriptions_renewed,
               0 AS subscriptions_refunded, 0 AS subscriptions_lapsed
        FROM \(rows) WHERE purchase_date IS NOT NULL
        UNION ALL
        SELECT environment, (revocation_date AT TIME ZONE 'UTC')::date, client_id, store,
               COALESCE(product_id, ''), COALESCE(currency, ''), 0, 0, 0, 0, \(sign),
               \(sign) * COALESCE(price_milliunits * COALESCE(refund_percentage_milliunits, 100000) / 100000, 0), 0, 0,
               \(sign) * (\(subscription))::int, 0
        FROM \(rows) WHERE revocation_date IS NOT NULL AND state = 'refunded'
        """
    }

    /// A subscription that ended without renewal counts on the day its paid time (or grace) ended.
    static func subscriptionCells(_ rows: String, sign: String) -> String {
        """
        SELECT environment, (COALESCE(grace_period_expires_date, expires_date) AT TIME ZONE 'UTC')::date AS day, client_id, store,
               COALESCE(product_id, '') AS product_id, '' AS currency,
               \(ledgerCounters.dropLast().map { "0 AS \($0)" }.joined(separator: ", ")), \(sign) AS subscriptions_lapsed
        FROM \(rows) WHERE status = 'expired' AND COALESCE(grace_period_expires_date, expires_date) IS NOT NULL
        """
    }

    /// An attempt's outcome as `/metrics` names it (`verified`, `duplicate`, `store_error`,
    /// `refused:<REASON>`), from a `verification_attempts` row.
    static let attemptOutcome = """
        CASE WHEN outcome = 'verified' AND duplicate THEN 'duplicate' WHEN outcome = 'verified' THEN 'verified'
             WHEN error_code = '\(ErrorCode.verifierError.rawValue)' THEN 'store_error'
             ELSE 'refused:' || COALESCE(error_reason, error_code, 'OTHER') END
        """

    static func attemptCells(_ rows: String, sign: String) -> String {
        """
        SELECT (created_at AT TIME ZONE 'UTC')::date AS day, COALESCE(client_id, '') AS client_id,
               COALESCE(store, 'unknown') AS store, \(attemptOutcome) AS outcome, \(sign) AS attempts
        FROM \(rows)
        """
    }

    /// Adds `cells` (lines of key and counters) to `table`, summed per key, in key order.
    static func upsert(into table: String, key: [String], counters: [String], cells: String, shard: String) -> String {
        let keys = key.joined(separator: ", ")
        return """
            INSERT INTO \(table) (\(keys), shard, \(counters.joined(separator: ", ")))
            SELECT \(keys), \(shard), \(counters.map { "sum(\($0))" }.joined(separator: ", "))
            FROM (\(cells)) cells
            GROUP BY \(keys)
            HAVING \(counters.map { "sum(\($0)) <> 0" }.joined(separator: " OR "))
            ORDER BY \(keys)
            ON CONFLICT (\(keys), shard) DO UPDATE SET
                \(counters.map { "\($0) = \(table).\($0) + EXCLUDED.\($0)" }.joined(separator: ", "))
            """
    }

    private static let connectionShard = "pg_backend_pid()"

    /// For each ledger table: one function and one statement trigger per event, with the rows the
    /// statement inserted (`added`), deleted (`removed`) or both.
    static var triggers: String {
        let tables:
            [(table: String, rollup: String, key: [String], counters: [String], cells: (String, String) -> String)] = [
                ("transactions", "ledger_days", ledgerKey, ledgerCounters, transactionCells),
                ("subscriptions", "ledger_days", ledgerKey, ledgerCounters, subscriptionCells),
                ("verification_attempts", "attempt_days", attemptKey, ["attempts"], attemptCells),
            ]
        return tables.map { table in
            [
                ("insert", "NEW TABLE AS added", ["added": "1"]), ("delete", "OLD TABLE AS removed", ["removed": "-1"]),
                ("update", "OLD TABLE AS removed NEW TABLE AS added", ["added": "1", "removed": "-1"]),
            ]
            .map { event, referencing, sides in
                let cells = sides.sorted { $0.key < $1.key }.map { table.cells($0.key, $0.value) }
                    .joined(separator: "\nUNION ALL\n")
                let function = "\(table.rollup)_\(table.table)_\(event)"
                return """
                    CREATE FUNCTION \(function)() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN
                        \(upsert(into: table.rollup, key: table.key, counters: table.counters, cells: cells, shard: connectionShard));
                        RETURN NULL;
                    END $$;
                    CREATE TRIGGER \(function) AFTER \(event.uppercased()) ON \(table.table)
                        REFERENCING \(referencing) FOR EACH STATEMENT EXECUTE FUNCTION \(function)();
                    """
            }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// The existing rows' sums, each in shard 0.
    static var backfill: String {
        """
        \(upsert(into: "ledger_days", key: ledgerKey, counters: ledgerCounters,
                 cells: transactionCells("transactions", sign: "1") + "\nUNION ALL\n" + subscriptionCells("subscriptions", sign: "1"),
                 shard: "0"));
        \(upsert(into: "attempt_days", key: attemptKey, counters: ["attempts"],
                 cells: attemptCells("verification_attempts", sign: "1"), shard: "0"));
        """
    }
}
