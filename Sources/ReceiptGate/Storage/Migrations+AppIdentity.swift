import Postgres

extension Schema {
    static let appIdentityMigrations: [Migration] = [
        // A store's stable id for the buyer's account and app: the same on every purchase one
        // account makes in one app. Null where the store gives none (and on rows recorded before
        // it was kept, until a later notification of the purchase carries it).
        //
        // A store is told a linked purchase's account token once, ever: a re-sent link or two
        // links at once queue nothing more (`OutboxRepository.enqueue(_: AccountTokenAssignment)`).
        Migration(
            version: 23, name: "app_identity",
            sql: """
                ALTER TABLE transactions ADD COLUMN app_transaction_id text;
                CREATE UNIQUE INDEX outbox_store_account_token_once ON outbox (aggregate_key) WHERE target = 'store_account_token';
                """)
    ]
}
