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
                """),
        // The foreign keys of the rows every purchase writes guarded against what never happens
        // (a client or a transaction row is never deleted: a client is disabled, the ledger kept
        // whole), and each cost the hot path a row lock: every purchase locked its client's one row
        // FOR KEY SHARE (concurrent purchases shared it as a MultiXact) for its transaction, its
        // webhook and its entitlements, and its new transaction row for its attempt. An outbox
        // insert took 72 µs a row with its key, 33 without. Dropping a key is instant (no rewrite).
        Migration(
            version: 27, name: "hot_path_keys",
            sql: """
                ALTER TABLE transactions DROP CONSTRAINT transactions_client_id_fkey;
                ALTER TABLE verification_attempts DROP CONSTRAINT verification_attempts_transaction_row_id_fkey;
                ALTER TABLE outbox DROP CONSTRAINT outbox_client_id_fkey;
                ALTER TABLE player_entitlements DROP CONSTRAINT player_entitlements_client_id_fkey;
                """),
        // A message written claimed (a new purchase's webhook, handed to its writer's worker) keeps
        // its body as the text that is sent, not as jsonb: parsing every webhook into jsonb cost
        // Postgres about 19 µs of each purchase with a webhook, and a retry sent jsonb's rewriting
        // of it (keys reordered, spaces added) rather than the bytes the first attempt signed.
        // Every other message keeps jsonb in `payload`, which a process of the version before,
        // still running in a rolling upgrade, claims and reads as it did. It cannot read a `body`:
        // a claim of its that takes one (only once the writer stopped and the lease ran out) fails,
        // and what that claim leased waits out the lease for another worker (docs/operations.md
        // says what a rollback must do).
        // Adding a nullable column and dropping a NOT NULL rewrite nothing; the check is enforced
        // from now on without reading the table.
        Migration(
            version: 40, name: "outbox_text_bodies",
            sql: """
                ALTER TABLE outbox ADD COLUMN body text;
                ALTER TABLE outbox ALTER COLUMN payload DROP NOT NULL;
                ALTER TABLE outbox ADD CONSTRAINT outbox_has_a_body CHECK (body IS NOT NULL OR payload IS NOT NULL) NOT VALID;
                """),
        // A message's body apart from its delivery state. Postgres writes a new version of a whole
        // row on update, and the delivered mark can never be an in-place HOT update (the pending
        // state it changes is in the queue indexes' predicates): with a webhook's 1.2 KB body in
        // the row, every mark copied it. A message written claimed and leased keeps its body here,
        // written once and never updated, so the row the mark rewrites is under 200 bytes. Bodies
        // already in `outbox.body` stay there and are read from there. A process of the version
        // before (in a rolling upgrade) cannot read a body kept here (docs/operations.md says what
        // a rollback must do). The check that a row holds a body cannot hold now; the claim refuses
        // to send a message whose body it cannot find instead.
        // Nothing is rewritten or read, but dropping the check waits for the table's exclusive lock
        // (behind any long transaction on it, holding the outbox's writes meanwhile).
        Migration(
            version: 41, name: "outbox_bodies_apart",
            sql: """
                CREATE TABLE outbox_bodies (id bigint PRIMARY KEY, body text NOT NULL);
                ALTER TABLE outbox DROP CONSTRAINT outbox_has_a_body;
                """),
        // A message a verification hands to its process's worker is written already delivered, in
        // the final state a success leaves it in, so a success writes nothing: the delivered mark,
        // a new version of the row and its index entries (which could never be a HOT update), was
        // what kept a game's verifications with a webhook below 0.8× of those without. Until its
        // sender settles it, the message is *in flight*: its group commit's row in `outbox_handed`
        // (one for each client's messages the commit wrote handed, under the commit's lease) says so. A failure or a park
        // puts the message back in the pending state; once every message of a commit is settled,
        // the sender deletes its row (it vouches for them). A row whose lease ran out belongs to a
        // sender that stopped without settling: any worker puts its messages that still say
        // delivered back in the pending state, to be sent again (at least once). Later messages of
        // an aggregate wait, unplaced, while one of it is in flight. Adding a nullable column and
        // a table rewrites nothing.
        Migration(
            version: 42, name: "outbox_handed_delivered",
            sql: """
                ALTER TABLE outbox ADD COLUMN handed_in bigint;
                CREATE TABLE outbox_handed (first_id bigint PRIMARY KEY, last_id bigint NOT NULL, lease_until timestamptz NOT NULL);
                """),
    ]
}
