import Postgres

extension Schema {
    static let entitlementMigrations: [Migration] = [
        // A client's catalog: which entitlements each of its products grants, per store (one
        // product may grant several; the same entitlement may come from products of several stores).
        Migration(
            version: 21, name: "product_entitlements",
            sql: """
                CREATE TABLE product_entitlements (
                    client_id text NOT NULL REFERENCES clients (id),
                    store text NOT NULL,
                    product_id text NOT NULL,
                    entitlement text NOT NULL,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (client_id, store, product_id, entitlement)
                );
                CREATE INDEX product_entitlements_by_entitlement ON product_entitlements (client_id, entitlement);
                """),
        // What each player owns now, per client catalog: one row per entitlement, the purchase that
        // grants it (the preferred one when several do), kept current by the ledger's writes so a
        // read is one index lookup. A row stays until a change or the expiry sweep removes it;
        // reads also skip rows past their end, so a read never waits for the sweep.
        Migration(
            version: 22, name: "player_entitlements",
            sql: """
                CREATE TABLE player_entitlements (
                    client_id text NOT NULL REFERENCES clients (id),
                    player_id text NOT NULL,
                    entitlement text NOT NULL,
                    store text NOT NULL,
                    environment text NOT NULL,
                    product_id text NOT NULL,
                    transaction_row_id bigint NOT NULL,  -- no foreign key: derived data, and its KEY SHARE lock would deadlock with a store event's row lock
                    transaction_id text NOT NULL,
                    original_transaction_id text,
                    purchase_date timestamptz,
                    expires_date timestamptz,
                    grace_period_expires_date timestamptz,
                    will_renew boolean NOT NULL DEFAULT false,
                    ownership text,
                    granted_at timestamptz NOT NULL DEFAULT now(),
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (client_id, player_id, entitlement)
                );
                CREATE INDEX player_entitlements_ending ON player_entitlements ((GREATEST(expires_date, grace_period_expires_date)))
                    WHERE expires_date IS NOT NULL;
                CREATE INDEX player_entitlements_product ON player_entitlements (client_id, store, product_id);
                """),
    ]

    static let catalogRefreshMigrations: [Migration] = [
        // The catalog refreshes owed: a catalog change (or a client's change of game or environments)
        // writes one in its own transaction, and it is deleted only once the refresh of the
        // product's holders committed; so a change whose refresh was cut off (a request deadline,
        // an interrupted command, a crash) is finished by a service's worker. `generation` is new
        // with every request, from a sequence (never reused, even for a row deleted and written
        // again), so a refresh that began before it does not delete it; `not_before` is the lease
        // of whoever refreshes (or the next retry).
        Migration(
            version: 24, name: "catalog_refreshes",
            sql: """
                CREATE SEQUENCE catalog_refresh_generations;
                CREATE TABLE catalog_refreshes (
                    client_id text NOT NULL,
                    store text NOT NULL,
                    product_id text NOT NULL,
                    requested_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                    generation bigint NOT NULL DEFAULT nextval('catalog_refresh_generations'),
                    not_before timestamptz NOT NULL DEFAULT clock_timestamp(),
                    attempts integer NOT NULL DEFAULT 0,
                    last_error text,
                    PRIMARY KEY (client_id, store, product_id)
                );
                CREATE INDEX catalog_refreshes_due ON catalog_refreshes (not_before);
                """),
        // Whether a subscription renews is unknown until its store says (null), not "no": a grant's
        // `will_renew` carries that. Grants written before hold false for those; they say so now.
        Migration(
            version: 31, name: "grants_renewal_unknown",
            sql: """
                ALTER TABLE player_entitlements ALTER COLUMN will_renew DROP NOT NULL, ALTER COLUMN will_renew DROP DEFAULT;
                UPDATE player_entitlements pe SET will_renew = NULL
                FROM subscriptions s
                WHERE s.store = pe.store AND s.environment = pe.environment
                  AND s.original_transaction_id = pe.original_transaction_id AND s.auto_renew IS NULL;
                """),
    ]
}
