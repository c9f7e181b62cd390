import Postgres

extension Schema {
    static let analyticsMigrations: [Migration] = [
        // The console's analytics read the ledger itself, not a roll-up: every figure is the same in
        // every process and after a restart, and the verify path writes nothing more than an index
        // entry. `transactions_sales` covers what a day's sales are summed from (a range of purchase
        // dates in one environment), so a 90-day page reads an index and not the table; the columns
        // it carries never change after the first write, so updates of a row's state stay HOT.
        // Refunds are found by their own date (few rows: partial). Attempts and outbox rows are
        // written in time order: a BRIN index on their time is a few pages and costs an insert
        // almost nothing. `currency_rates` holds what the operator loaded (`receiptgate rates set`):
        // a rate converts one unit of `currency` into the base currency from `day` until the next
        // rate of that currency; nothing is fetched from outside.
        Migration(
            version: 30, name: "analytics",
            sql: """
                CREATE INDEX IF NOT EXISTS transactions_sales ON transactions (environment, purchase_date)
                    INCLUDE (store, client_id, product_id, currency, price_milliunits);
                CREATE INDEX IF NOT EXISTS transactions_revocations ON transactions (environment, revocation_date)
                    WHERE revocation_date IS NOT NULL;
                CREATE INDEX verification_attempts_time ON verification_attempts USING brin (created_at);
                CREATE INDEX outbox_time ON outbox USING brin (created_at);
                CREATE TABLE currency_rates (
                    currency text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
                    day date NOT NULL,
                    base text NOT NULL CHECK (base ~ '^[A-Z]{3}$'),
                    rate numeric NOT NULL CHECK (rate > 0),
                    loaded_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (currency, day)
                );
                """)
    ]
}
