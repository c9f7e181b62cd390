import Postgres

extension Schema {
    static let outboxMigrations: [Migration] = [
        // The head of each aggregate (its oldest pending message, the only one that may be sent)
        // is kept, not searched for: a claim reads the due heads from their own index, client by
        // client, so its cost does not grow with the backlog behind them. A new message is written
        // unplaced (no lock in the caller's transaction); the outbox worker places it (`OutboxHeads`).
        // Rows there already count as placed.
        Migration(
            version: 26, name: "outbox_heads",
            sql: """
                ALTER TABLE outbox ADD COLUMN is_head boolean NOT NULL DEFAULT false;
                ALTER TABLE outbox ADD COLUMN placed boolean NOT NULL DEFAULT true;
                ALTER TABLE outbox ALTER COLUMN placed SET DEFAULT false;
                UPDATE outbox o SET is_head = true
                FROM (SELECT min(id) AS id FROM outbox WHERE status = 'pending' GROUP BY client_id, aggregate_key, target) h
                WHERE o.id = h.id;
                CREATE INDEX outbox_heads_due ON outbox (client_id, next_attempt_at) WHERE status = 'pending' AND is_head;
                CREATE INDEX outbox_unplaced ON outbox (id) WHERE status = 'pending' AND NOT placed;
                DROP INDEX outbox_due;
                DROP INDEX outbox_aggregate;
                CREATE INDEX outbox_aggregate ON outbox (client_id, aggregate_key, target, id) WHERE status = 'pending';
                -- When a notification's raw body was dropped under the retention setting (the row stays:
                -- it still deduplicates a notification sent again).
                ALTER TABLE store_notifications ADD COLUMN body_removed_at timestamptz;
                """)
    ]
}
