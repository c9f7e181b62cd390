import Postgres

extension Schema {
    static let commerceMigrations: [Migration] = [
        // What a purchase was bought under, in the API's own shape (`PurchaseOffer`, `PurchaseItem`,
        // `BillingCommitment`), null where the store says nothing. JSON columns rather than tables:
        // each is read and written whole with its transaction row and shown whole, never joined
        // on, except the items' SKUs by the entitlement index (a handful of items per purchase,
        // only of purchases whose items the catalog maps). A commitment is read from the
        // subscription's latest period, so the subscriptions table needs nothing new.
        Migration(
            version: 33, name: "purchase_terms",
            sql: """
                ALTER TABLE transactions ADD COLUMN offer jsonb;
                ALTER TABLE transactions ADD COLUMN commerce_items jsonb;
                ALTER TABLE transactions ADD COLUMN commitment jsonb;
                """)
    ]
}
