import Postgres

extension Schema {
    static let claimMigrations: [Migration] = [
        // A row a store told us of is known, not claimed: `claimed_at` stays NULL until a game's
        // first verification claims it (with the claim's player ids and game version). Rows a
        // game verified before this column existed were claimed then. The refund columns keep how
        // much a store refunded (a prorated or quantity-based refund is partial).
        Migration(version: 17, name: "claims", sql: """
            ALTER TABLE transactions ADD COLUMN claimed_at timestamptz, ADD COLUMN game_version text,
                ADD COLUMN refund_store_type text, ADD COLUMN refund_partial boolean,
                ADD COLUMN refund_percentage_milliunits integer, ADD COLUMN refunded_quantity integer;
            UPDATE transactions t SET claimed_at = t.first_verified_at
            WHERE EXISTS (SELECT 1 FROM verification_attempts a WHERE a.transaction_row_id = t.id AND a.outcome = 'verified');
            """),
    ]
}
