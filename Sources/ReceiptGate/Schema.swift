public import Postgres

/// The database schema, as numbered migrations. Append; never edit one that has shipped.
public enum Schema {
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "clients", sql: """
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
        Migration(version: 2, name: "store_notifications", sql: """
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
    ]
}
