import Postgres

extension Schema {
    static let orderMigrations: [Migration] = [
        // Orders the service started with a store for a game (`POST /v1/orders`): not purchases,
        // nothing is owned until one is finished by a verification of its id, when its items
        // become transactions as any store's purchases do. The order id is the service's, unique
        // per store (the store keeps it as its own key); `store_account` is the buyer's account
        // there. `verify_attempts` counts the verifications that asked the store to finish it, so
        // a retry after a lost answer asks the store where it stands before finishing again.
        Migration(
            version: 29, name: "orders",
            sql: """
                CREATE TABLE orders (
                    store text NOT NULL,
                    order_id text NOT NULL,
                    client_id text NOT NULL REFERENCES clients (id),
                    player_id text NOT NULL,
                    store_account text NOT NULL,
                    items jsonb NOT NULL,
                    currency text NOT NULL,
                    state text NOT NULL DEFAULT 'started' CHECK (state IN ('started', 'finished', 'closed')),
                    store_transaction_id text,
                    verify_attempts integer NOT NULL DEFAULT 0,
                    closed_reason text,
                    created_at timestamptz NOT NULL DEFAULT now(),
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (store, order_id)
                );
                CREATE INDEX orders_client ON orders (client_id, created_at DESC);
                -- A client's prices of its products per currency, for orders the service starts: a line of
                -- POST /v1/orders that leaves out its price (or description) takes it from here.
                CREATE TABLE product_prices (
                    client_id text NOT NULL REFERENCES clients (id),
                    store text NOT NULL,
                    product_id text NOT NULL,
                    currency text NOT NULL,
                    unit_price_milliunits bigint NOT NULL CHECK (unit_price_milliunits >= 0),
                    description text,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (client_id, store, product_id, currency)
                );
                -- When each client last saw a player's store account proven by a store-issued ticket
                -- (POST /v1/{store}/authenticate): a store may start orders only for recent proofs.
                CREATE TABLE proven_store_accounts (
                    client_id text NOT NULL REFERENCES clients (id),
                    store text NOT NULL,
                    account text NOT NULL,
                    proven_at timestamptz NOT NULL,
                    PRIMARY KEY (client_id, store, account)
                );
                """)
    ]
}
