import Postgres

extension Schema {
    static let appIdentityMigrations: [Migration] = [
        // A store's stable id for the buyer's account and app: the same on every purchase one
        // account makes in one app. Null where the store gives none (and on rows recorded before
        // it was kept, until a later notification of the purchase carries it).
        Migration(version: 23, name: "app_transaction_id", sql: """
            ALTER TABLE transactions ADD COLUMN app_transaction_id text;
            """),
    ]
}
