import Postgres

extension Schema {
    static let externalPurchaseMigrations: [Migration] = [
        // Tokens of purchases made outside a store's billing, and what was reported of each. A
        // token is the store's (one row per store, environment and the id its reports name it by);
        // its sale is a web store's order, found by the token the sale carries or by the order the
        // game named (`transactions_order_id` finds an order: no other index on the purchases'
        // table, which every purchase would pay for). `report_by` is when a token with no sale is reported as such (the client's
        // setting, never past the store's deadline); `refunded_share` is the share of the sale
        // (thousandths of a percent) whose refund was reported, so each refund is reported once;
        // `sale_rows` are the ledger rows its sale report named. States: waiting (no sale, nothing
        // owed yet), sale_queued / no_sale_queued / unrecognized_queued (a report in the outbox),
        // reported / reported_no_sale / reported_unrecognized (the store took it), refused.
        Migration(
            version: 28, name: "external_purchase_tokens",
            sql: """
                ALTER TABLE transactions ADD COLUMN external_purchase_token text;
                CREATE INDEX transactions_external_purchase_token ON transactions (external_purchase_token)
                    WHERE external_purchase_token IS NOT NULL;
                CREATE TABLE external_purchase_tokens (
                    id bigserial PRIMARY KEY,
                    client_id text NOT NULL REFERENCES clients (id),
                    store text NOT NULL,
                    environment text NOT NULL,
                    app_identifier text NOT NULL,
                    report_id text NOT NULL,
                    token text NOT NULL,
                    player_id text,
                    web_store text,
                    order_id text,
                    issued_at timestamptz,
                    store_deadline timestamptz NOT NULL,
                    report_by timestamptz NOT NULL,
                    state text NOT NULL DEFAULT 'waiting',
                    sale_rows bigint[],
                    sale_reported_at timestamptz,
                    refunded_share integer NOT NULL DEFAULT 0,
                    reports_sent integer NOT NULL DEFAULT 0,
                    last_answer text,
                    last_error text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    UNIQUE (store, environment, report_id)
                );
                CREATE INDEX external_purchase_tokens_waiting ON external_purchase_tokens (report_by) WHERE state = 'waiting';
                CREATE INDEX external_purchase_tokens_client ON external_purchase_tokens (client_id, id);
                CREATE INDEX external_purchase_tokens_token ON external_purchase_tokens (client_id, token);
                """),
        // A subscription sold through a token renews: each later paid period of the sale's
        // subscription is reported too, once (`renewal_rows`, the ledger rows reported as renewals),
        // and each one's refunds on their own (`renewal_refunded`: row id → the share reported, as
        // `refunded_share` is for the sale). `unreported_notices` counts the store's notices that
        // the token's report was late (an alert, on `/metrics`). `once_per_player`: the store issues
        // such a token once per customer (an acquisition token), so a player's later one with
        // no sale is reported as a duplicate (states duplicate_queued, reported_duplicate).
        Migration(
            version: 36, name: "external_purchase_renewals",
            sql: """
                ALTER TABLE external_purchase_tokens
                    ADD COLUMN renewal_rows bigint[] NOT NULL DEFAULT '{}',
                    ADD COLUMN renewal_refunded jsonb NOT NULL DEFAULT '{}',
                    ADD COLUMN unreported_notices integer NOT NULL DEFAULT 0,
                    ADD COLUMN once_per_player boolean NOT NULL DEFAULT false;
                """),
        // What a web sale's buyer paid in all and the tax within it, as the web store says: the
        // reports of sales made outside a store's billing declare both. Null where a store does
        // not say (every mobile store's purchase).
        Migration(
            version: 37, name: "transaction_paid_and_tax",
            sql: """
                ALTER TABLE transactions ADD COLUMN paid_milliunits bigint, ADD COLUMN tax_milliunits bigint;
                """),
        // A token reported without a sale is still looked for in the ledger for a while after its
        // deadline (its sale may come late): the sweep finds those due recently without reading
        // every one.
        Migration(
            version: 39, name: "external_purchase_late_sales",
            sql: """
                CREATE INDEX external_purchase_tokens_without_sale ON external_purchase_tokens (report_by)
                    WHERE state IN ('no_sale_queued', 'reported_no_sale', 'duplicate_queued', 'reported_duplicate');
                """),
    ]
}
