public import Postgres

/// The database schema, as numbered migrations. Append; never edit one that has shipped.
public enum Schema {
    /// In version order, whichever feature's file each is kept in (the order they are applied in).
    public static let migrations: [Migration] =
        ([
            Migration(
                version: 1, name: "clients",
                sql: """
                    CREATE TABLE clients (
                        id text PRIMARY KEY,
                        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
                        game_id bigint,
                        bundle_ids text[] NOT NULL DEFAULT '{}',
                        package_names text[] NOT NULL DEFAULT '{}',
                        environments text[] NOT NULL DEFAULT '{production}',
                        refund_callback_url text,
                        webhook_url text,
                        secret_ciphertext bytea NOT NULL,
                        secret_rotated_at timestamptz NOT NULL DEFAULT now(),
                        disabled_at timestamptz,
                        created_at timestamptz NOT NULL DEFAULT now(),
                        updated_at timestamptz NOT NULL DEFAULT now()
                    );
                    CREATE INDEX clients_game_id ON clients (game_id);
                    """),
            Migration(
                version: 2, name: "store_notifications",
                sql: """
                    CREATE TABLE store_notifications (
                        id bigserial PRIMARY KEY,
                        store text NOT NULL,
                        notification_id text NOT NULL,
                        notification_type text NOT NULL,
                        subtype text,
                        environment text,
                        app_identifier text,
                        transaction_id text,
                        original_transaction_id text,
                        product_id text,
                        signed_at timestamptz,
                        raw_body bytea NOT NULL,
                        decoded jsonb NOT NULL,
                        received_at timestamptz NOT NULL DEFAULT now(),
                        processed_at timestamptz,
                        UNIQUE (store, notification_id)
                    );
                    CREATE INDEX store_notifications_transaction ON store_notifications (store, original_transaction_id);
                    """),
            Migration(
                version: 3, name: "ledger",
                sql: """
                    CREATE TABLE transactions (
                        id bigserial PRIMARY KEY,
                        store text NOT NULL,
                        environment text NOT NULL,
                        transaction_id text NOT NULL,
                        original_transaction_id text,
                        order_id text,
                        product_id text,
                        product_kind text,
                        quantity integer,
                        price_milliunits bigint,
                        currency text,
                        storefront text,
                        app_identifier text,
                        purchase_date timestamptz,
                        expires_date timestamptz,
                        revocation_date timestamptz,
                        revocation_reason text,
                        ownership text,
                        account_token text,
                        state text NOT NULL DEFAULT 'active',
                        client_id text NOT NULL REFERENCES clients (id),
                        game_id bigint,
                        player_id text,
                        character_id text,
                        server_id text,
                        first_verified_at timestamptz NOT NULL DEFAULT now(),
                        updated_at timestamptz NOT NULL DEFAULT now(),
                        UNIQUE (store, environment, transaction_id)
                    );
                    CREATE INDEX transactions_original ON transactions (store, original_transaction_id);
                    CREATE INDEX transactions_player ON transactions (client_id, player_id, id);

                    CREATE TABLE verification_attempts (
                        id bigserial PRIMARY KEY,
                        client_id text,
                        store text,
                        request_id text,
                        outcome text NOT NULL,
                        error_code text,
                        error_reason text,
                        error_message text,
                        transaction_row_id bigint REFERENCES transactions (id),
                        duplicate boolean,
                        player_id text,
                        evidence_sha256 text,
                        created_at timestamptz NOT NULL DEFAULT now()
                    );
                    CREATE INDEX verification_attempts_client ON verification_attempts (client_id, created_at);

                    CREATE TABLE subscriptions (
                        id bigserial PRIMARY KEY,
                        store text NOT NULL,
                        environment text NOT NULL,
                        original_transaction_id text NOT NULL,
                        product_id text,
                        status text NOT NULL DEFAULT 'active',
                        expires_date timestamptz,
                        grace_period_expires_date timestamptz,
                        auto_renew boolean,
                        revocation_date timestamptz,
                        latest_transaction_id text,
                        client_id text NOT NULL REFERENCES clients (id),
                        updated_at timestamptz NOT NULL DEFAULT now(),
                        UNIQUE (store, environment, original_transaction_id)
                    );

                    CREATE TABLE outbox (
                        id bigserial PRIMARY KEY,
                        event_id uuid NOT NULL UNIQUE,
                        client_id text NOT NULL REFERENCES clients (id),
                        event_type text NOT NULL,
                        aggregate_key text NOT NULL,
                        payload jsonb NOT NULL,
                        status text NOT NULL DEFAULT 'pending',
                        attempts integer NOT NULL DEFAULT 0,
                        next_attempt_at timestamptz NOT NULL DEFAULT now(),
                        last_error text,
                        created_at timestamptz NOT NULL DEFAULT now(),
                        delivered_at timestamptz
                    );
                    CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
                    """),
            Migration(
                version: 4, name: "outbox_leases",
                sql: """
                    ALTER TABLE outbox ADD COLUMN lease_until timestamptz;
                    CREATE INDEX outbox_aggregate ON outbox (client_id, aggregate_key, id) WHERE status = 'pending';
                    """),
            Migration(
                version: 5, name: "request_signatures",
                sql: """
                    CREATE TABLE request_signatures (
                        signature text PRIMARY KEY,
                        expires_at timestamptz NOT NULL
                    );
                    CREATE INDEX request_signatures_expiry ON request_signatures (expires_at);
                    """),
            Migration(
                version: 6, name: "outbox_targets",
                sql: """
                    ALTER TABLE outbox ADD COLUMN target text NOT NULL DEFAULT 'webhook';
                    ALTER TABLE clients ADD COLUMN delivery_url text;
                    """),
            Migration(
                version: 7, name: "dialect_state",
                sql: """
                    ALTER TABLE clients ADD COLUMN refund_callback_format text NOT NULL DEFAULT 'alogame';
                    -- Plugins' own client settings (name → list of strings), and their secrets, sealed.
                    ALTER TABLE clients ADD COLUMN settings jsonb NOT NULL DEFAULT '{}';
                    ALTER TABLE clients ADD COLUMN sealed_settings bytea;

                    -- Opaque tokens, kept only as their SHA-256.
                    CREATE TABLE tokens (
                        token_sha256 bytea PRIMARY KEY,
                        kind text NOT NULL,
                        client_id text NOT NULL REFERENCES clients (id),
                        account_id text,
                        family text NOT NULL,
                        payload text,
                        expires_at timestamptz NOT NULL,
                        spent_at timestamptz,
                        revoked_at timestamptz,
                        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
                    );
                    CREATE INDEX tokens_family ON tokens (family);
                    CREATE INDEX tokens_expiry ON tokens (expires_at);

                    CREATE TABLE accounts (
                        id text PRIMARY KEY,
                        client_id text NOT NULL REFERENCES clients (id),
                        scope text NOT NULL,
                        username text NOT NULL,
                        email text,
                        email_verified boolean NOT NULL DEFAULT false,
                        pending_email text,
                        password_hash text,
                        attribution jsonb,
                        created_at timestamptz NOT NULL DEFAULT now(),
                        updated_at timestamptz NOT NULL DEFAULT now(),
                        UNIQUE (scope, username)
                    );
                    CREATE INDEX accounts_email ON accounts (scope, lower(email));

                    -- A purchase (its original transaction) belongs to at most one account per game.
                    CREATE TABLE account_links (
                        scope text NOT NULL,
                        store text NOT NULL,
                        original_transaction_id text NOT NULL,
                        account_id text NOT NULL REFERENCES accounts (id),
                        created_at timestamptz NOT NULL DEFAULT now(),
                        PRIMARY KEY (scope, store, original_transaction_id)
                    );
                    CREATE INDEX account_links_account ON account_links (account_id);

                    -- Shared rate limits: one row per policy, key and window.
                    CREATE TABLE rate_limit_counters (
                        policy text NOT NULL,
                        key text NOT NULL,
                        window_start timestamptz NOT NULL,
                        hits integer NOT NULL,
                        PRIMARY KEY (policy, key, window_start)
                    );
                    """),
            // Scheduled store polls (Google's voided purchases): one lease row per poll, so one process
            // at a time runs it across the cluster, and the cursors that say where each stopped.
            Migration(
                version: 9, name: "store_polls",
                sql: """
                    CREATE TABLE store_polls (
                        name text PRIMARY KEY,
                        lease_owner text,
                        lease_until timestamptz,
                        last_run_at timestamptz
                    );
                    CREATE TABLE store_poll_cursors (
                        key text PRIMARY KEY,
                        value text NOT NULL,
                        updated_at timestamptz NOT NULL DEFAULT now()
                    );
                    """),
            // The keys that sign OpenID access tokens, sealed under the master key.
            Migration(
                version: 10, name: "signing_keys",
                sql: """
                    CREATE TABLE signing_keys (
                        kid text PRIMARY KEY,
                        algorithm text NOT NULL DEFAULT 'ES256',
                        private_key_ciphertext bytea NOT NULL,
                        public_jwk jsonb NOT NULL,
                        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
                        retired_at timestamptz,
                        -- A retired key stays in the JWKS until the tokens it signed have expired.
                        published_until timestamptz
                    );
                    -- At most one current key, whatever number of processes start at once.
                    CREATE UNIQUE INDEX signing_keys_one_current ON signing_keys ((true)) WHERE retired_at IS NULL;
                    """),
            // Processes cache authenticated clients. Every change to a client row,
            // whoever makes it, bumps its version and notifies `receiptgate_clients` with its id at
            // commit; a verification's statement checks the version it was authenticated with.
            Migration(
                version: 12, name: "client_versions",
                sql: """
                    ALTER TABLE clients ADD COLUMN version bigint NOT NULL DEFAULT 1;
                    CREATE FUNCTION receiptgate_client_version() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN NEW.version := OLD.version + 1; RETURN NEW; END $$;
                    CREATE TRIGGER clients_version BEFORE UPDATE ON clients FOR EACH ROW EXECUTE FUNCTION receiptgate_client_version();
                    CREATE FUNCTION receiptgate_client_changed() RETURNS trigger LANGUAGE plpgsql AS $$
                    BEGIN PERFORM pg_notify('receiptgate_clients', OLD.id); RETURN NULL; END $$;
                    CREATE TRIGGER clients_changed AFTER UPDATE OR DELETE ON clients FOR EACH ROW EXECUTE FUNCTION receiptgate_client_changed();
                    """),
            // Every account gets the UUID the app sets as the App Store's appAccountToken at purchase
            // time: a bare transaction id links to an account only when its purchase carries that UUID.
            // A confirmed address changes only with its own approval as well as the new one's.
            // One account per game holds a confirmed address; where earlier rules let two confirm
            // the same one, the oldest keeps it confirmed.
            Migration(
                version: 13, name: "account_ownership",
                sql: """
                    ALTER TABLE accounts ADD COLUMN app_account_token uuid NOT NULL DEFAULT gen_random_uuid();
                    CREATE UNIQUE INDEX accounts_app_account_token ON accounts (app_account_token);
                    ALTER TABLE accounts ADD COLUMN pending_email_approved boolean NOT NULL DEFAULT false;
                    UPDATE accounts a SET email_verified = false
                    WHERE a.email_verified AND EXISTS (
                        SELECT 1 FROM accounts b WHERE b.scope = a.scope AND lower(b.email) = lower(a.email) AND b.email_verified
                        AND (b.created_at, b.id) < (a.created_at, a.id));
                    CREATE UNIQUE INDEX accounts_one_confirmed_email ON accounts (scope, lower(email)) WHERE email_verified;
                    """),
            // A refusal made after the store proved a purchase (wrong product, another game's purchase...)
            // names its transaction, so an order lookup can say why that transaction never got recorded.
            Migration(
                version: 14, name: "refused_attempt_transactions",
                sql: """
                    ALTER TABLE verification_attempts ADD COLUMN transaction_id text;
                    CREATE INDEX verification_attempts_refused ON verification_attempts (store, transaction_id, id)
                        WHERE outcome = 'failed' AND transaction_id IS NOT NULL;
                    """),
            // A client's apps are kept per kind of identifier, as each store declares its own kind
            // (`{"bundle_id": [...], "package_name": [...]}`), so a new store needs no new column.
            Migration(
                version: 15, name: "app_identifiers_by_kind",
                sql: """
                    ALTER TABLE clients ADD COLUMN app_identifiers jsonb NOT NULL DEFAULT '{}';
                    UPDATE clients SET app_identifiers = jsonb_strip_nulls(jsonb_build_object(
                        'bundle_id', CASE WHEN cardinality(bundle_ids) > 0 THEN to_jsonb(bundle_ids) END,
                        'package_name', CASE WHEN cardinality(package_names) > 0 THEN to_jsonb(package_names) END));
                    ALTER TABLE clients DROP COLUMN bundle_ids, DROP COLUMN package_names;
                    -- Empty: refund callbacks in the service's default format (its first dialect's).
                    ALTER TABLE clients ALTER COLUMN refund_callback_format SET DEFAULT '';
                    """),
        ] + consoleMigrations + claimMigrations + entitlementMigrations + appIdentityMigrations
        + catalogRefreshMigrations
        + consumptionMigrations + outboxMigrations + orderMigrations + externalPurchaseMigrations
        + analyticsMigrations + consentMigrations + commerceMigrations + purchaseOptionMigrations
        + dailyRollupMigrations + rawBodyMigrations).sorted { $0.version < $1.version }
}
