import Postgres

extension Schema {
    static let entitlementMigrations: [Migration] = [
        // A client's catalog: which entitlements each of its products grants, per store (one
        // product may grant several; the same entitlement may come from products of several stores).
        Migration(version: 21, name: "product_entitlements", sql: """
            CREATE TABLE product_entitlements (
                client_id text NOT NULL REFERENCES clients (id),
                store text NOT NULL,
                product_id text NOT NULL,
                entitlement text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (client_id, store, product_id, entitlement)
            );
            CREATE INDEX product_entitlements_by_entitlement ON product_entitlements (client_id, entitlement);
            """),
    ]
}
