import Postgres

extension Schema {
    static let consoleMigrations: [Migration] = [
        // Console sessions live in the database so that every process behind a load balancer
        // honours a sign-in and a sign-out. Only a digest of the cookie is kept; `admin_token_mark`
        // ties a session to the admin token it was opened with, so changing the token ends them.
        Migration(
            version: 16, name: "console",
            sql: """
                CREATE TABLE console_sessions (
                    cookie_sha256 text PRIMARY KEY,
                    label text NOT NULL,
                    admin_token_mark text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    expires_at timestamptz NOT NULL
                );
                CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
                CREATE TABLE console_audit (
                    id bigserial PRIMARY KEY,
                    at timestamptz NOT NULL DEFAULT now(),
                    who text NOT NULL,
                    action text NOT NULL,
                    target text NOT NULL DEFAULT ''
                );
                -- What a notification asks of the operator (e.g. a subscription to confirm), for the console.
                ALTER TABLE store_notifications ADD COLUMN operator_notice jsonb;
                -- The console's lookups by order, account token, a purchase's attempts and events, and an
                -- account's tokens, without reading whole tables (partial where most rows have none).
                CREATE INDEX transactions_order_id ON transactions (order_id) WHERE order_id IS NOT NULL;
                CREATE INDEX transactions_account_token ON transactions (account_token) WHERE account_token IS NOT NULL;
                CREATE INDEX verification_attempts_transaction_row ON verification_attempts (transaction_row_id) WHERE transaction_row_id IS NOT NULL;
                CREATE INDEX outbox_aggregate_key ON outbox (aggregate_key);
                CREATE INDEX tokens_account ON tokens (account_id) WHERE account_id IS NOT NULL;
                """)
    ]
}
