import Postgres

extension Schema {
    static let claimMigrations: [Migration] = [
        // A row a store told us of is known, not claimed: `claimed_at` stays NULL until a game's
        // first verification claims it (with the claim's player ids and game version). Rows a
        // game verified before this column existed were claimed then. The refund columns keep how
        // much a store refunded (a prorated or quantity-based refund is partial).
        Migration(
            version: 17, name: "claims",
            sql: """
                ALTER TABLE transactions ADD COLUMN claimed_at timestamptz, ADD COLUMN game_version text,
                    ADD COLUMN refund_store_type text, ADD COLUMN refund_partial boolean,
                    ADD COLUMN refund_percentage_milliunits integer, ADD COLUMN refunded_quantity integer;
                UPDATE transactions t SET claimed_at = t.first_verified_at
                WHERE EXISTS (SELECT 1 FROM verification_attempts a WHERE a.transaction_row_id = t.id AND a.outcome = 'verified');
                """),
        // Each store poll run (a notification-history read, a voided-purchases poll): when, what
        // it found, how much of that no push had delivered, and why it failed; for the console.
        Migration(
            version: 18, name: "store_poll_runs",
            sql: """
                CREATE TABLE store_poll_runs (
                    id bigserial PRIMARY KEY,
                    poll text NOT NULL,
                    process text NOT NULL,
                    started_at timestamptz NOT NULL,
                    finished_at timestamptz NOT NULL DEFAULT now(),
                    found integer NOT NULL,
                    new integer NOT NULL,
                    error text
                );
                CREATE INDEX store_poll_runs_recent ON store_poll_runs (poll, id DESC);
                """),
        // Reconciliation: a run also counts the pages it read, the subscriptions it read back and
        // the changes it made; a subscription keeps what its store needs to read it again, when it
        // was last read back and how many read-backs in a row told nothing, so a quiet one is asked
        // once a day at most, and one the store has nothing on less and less often.
        Migration(
            version: 19, name: "reconciliation",
            sql: """
                ALTER TABLE store_poll_runs ADD COLUMN pages integer NOT NULL DEFAULT 0, ADD COLUMN reread integer NOT NULL DEFAULT 0,
                    ADD COLUMN changed integer NOT NULL DEFAULT 0, ADD COLUMN by_hand boolean NOT NULL DEFAULT false;
                ALTER TABLE subscriptions ADD COLUMN read_back_key text, ADD COLUMN reread_at timestamptz,
                    ADD COLUMN reread_empty integer NOT NULL DEFAULT 0;
                -- A grace end before the current period's end is an earlier period's, left behind by a renewal.
                UPDATE subscriptions SET grace_period_expires_date = NULL WHERE grace_period_expires_date < expires_date;
                CREATE INDEX subscriptions_quiet ON subscriptions (store, (COALESCE(grace_period_expires_date, expires_date)))
                    WHERE status IN ('active', 'grace_period', 'billing_retry');
                """),
        // Refund requests a store asks the developer to answer, with what was sent and what the
        // store decided; and the game's latest consumption report per transaction.
        Migration(
            version: 20, name: "refund_requests",
            sql: """
                CREATE TABLE consumption_reports (
                    transaction_row_id bigint PRIMARY KEY REFERENCES transactions (id),
                    delivered boolean NOT NULL,
                    consumed_milliunits integer,
                    usage_events jsonb NOT NULL DEFAULT '[]',
                    reported_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE TABLE refund_requests (
                    id bigserial PRIMARY KEY,
                    client_id text NOT NULL REFERENCES clients (id),
                    store text NOT NULL,
                    environment text NOT NULL,
                    request_id text NOT NULL,
                    transaction_id text NOT NULL,
                    transaction_row_id bigint REFERENCES transactions (id),
                    product_id text,
                    app_identifier text,
                    answer_token text,
                    reason text,
                    earlier_refunds integer,
                    requested_at timestamptz NOT NULL,
                    deadline timestamptz NOT NULL,
                    status text NOT NULL DEFAULT 'pending',
                    answer jsonb,
                    sent_body jsonb,
                    answered_at timestamptz,
                    outcome text,
                    outcome_at timestamptz,
                    note text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    UNIQUE (store, request_id)
                );
                CREATE INDEX refund_requests_pending ON refund_requests (deadline) WHERE status = 'pending';
                CREATE INDEX refund_requests_transaction ON refund_requests (store, transaction_id);
                CREATE INDEX refund_requests_client ON refund_requests (client_id, id DESC);
                """),
    ]
}
