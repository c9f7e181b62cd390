import Postgres

extension Schema {
    static let purchaseOptionMigrations: [Migration] = [
        // The purchase option (buy, rent, pre-order) a one-time product was bought under, where
        // the store has them (the offer used is the purchase's `offer`): shown in reads, and a
        // catalog may map a product with one purchase option (`<product>:<option>`) to
        // entitlements of its own.
        Migration(
            version: 34, name: "purchase_options",
            sql: """
                ALTER TABLE transactions ADD COLUMN purchase_option_id text;
                """)
    ]
}
