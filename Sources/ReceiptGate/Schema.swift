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
    ]
}
