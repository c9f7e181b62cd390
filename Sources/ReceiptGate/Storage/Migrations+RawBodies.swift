import Postgres

extension Schema {
    static let rawBodyMigrations: [Migration] = [
        // A notification's raw body kept compactly (`RawBodyCompaction`): a long JWS header (a
        // store's certificate chain) kept once in `raw_body_pieces`, by its SHA-256, and the body
        // as parts that name it (`raw_format` 1); 0 is the body as it came, as every row before.
        // A piece no body used for longer than raw bodies are kept (`last_used_at`, moved at most
        // once a day) is removed by retention once no kept body names it.
        Migration(
            version: 38, name: "raw_body_pieces",
            sql: """
                CREATE TABLE raw_body_pieces (
                    digest bytea PRIMARY KEY,
                    piece bytea NOT NULL,
                    first_seen_at timestamptz NOT NULL DEFAULT now(),
                    last_used_at timestamptz NOT NULL DEFAULT now()
                );
                ALTER TABLE store_notifications ADD COLUMN raw_format smallint NOT NULL DEFAULT 0;
                """)
    ]
}
