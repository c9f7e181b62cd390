import Foundation
import Postgres
import ReceiptCore

/// Orders the service started with a store for a game (`orders`): recorded before the store is
/// asked, moved on as verifications finish or close them. Never a purchase.
struct OrderRepository: Sendable {
    let pool: PostgresPool

    /// A random id in 1...Int64.max, written in decimal: a store that keeps 64-bit order ids takes it.
    static func newOrderID() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(UInt64.random(in: 1...UInt64(Int64.max), using: &generator))
    }

    /// Records the order as started; false when its id is taken already (pick another).
    func insert(_ request: OrderRequest, store: StoreID, clientID: String) async throws -> Bool {
        let items = String(decoding: try JSONEncoder().encode(request.items), as: UTF8.self)
        return try await pool.execute(
            """
            INSERT INTO orders (store, order_id, client_id, player_id, store_account, items, currency)
            VALUES (\(store.rawValue), \(request.orderID), \(clientID), \(request.playerID), \(request.storeAccount),
                    \(items)::jsonb, \(request.currency))
            ON CONFLICT (store, order_id) DO NOTHING
            """) == 1
    }

    /// The store's transaction id, once the store opened it.
    func opened(store: StoreID, orderID: String, storeTransactionID: String?) async throws {
        try await pool.execute(
            """
            UPDATE orders SET store_transaction_id = \(storeTransactionID), updated_at = now()
            WHERE store = \(store.rawValue) AND order_id = \(orderID)
            """)
    }

    /// What a verification of `orderID` by `clientID` finishes: the order as recorded, counting
    /// this attempt. `.closed` for an order the store will never finish; nil for one this client
    /// never started.
    enum Lookup: Sendable {
        case open(OrderRecord)
        case closed(reason: String?)
    }

    func beginFinishing(store: StoreID, orderID: String, clientID: String) async throws -> Lookup? {
        let rows = try await pool.query(
            """
            UPDATE orders SET verify_attempts = verify_attempts + CASE WHEN state = 'closed' THEN 0 ELSE 1 END,
                updated_at = now()
            WHERE store = \(store.rawValue) AND order_id = \(orderID) AND client_id = \(clientID)
            RETURNING player_id, store_account, items::text AS items, currency, store_transaction_id, state,
                closed_reason, verify_attempts
            """)
        guard let row = rows.first else { return nil }
        if try row.decode("state", as: String.self) == "closed" {
            return .closed(reason: try row.decode("closed_reason", as: String?.self))
        }
        let items = try JSONDecoder().decode(
            [OrderItem].self, from: Data(try row.decode("items", as: String.self).utf8))
        let attempts = try row.decode("verify_attempts", as: Int.self)
        return .open(
            OrderRecord(
                orderID: orderID, playerID: try row.decode("player_id"), storeAccount: try row.decode("store_account"),
                items: items, currency: try row.decode("currency"),
                storeTransactionID: try row.decode("store_transaction_id", as: String?.self),
                earlierAttempts: max(0, attempts - 1)))
    }

    func finished(store: StoreID, orderID: String) async throws {
        try await pool.execute(
            """
            UPDATE orders SET state = 'finished', updated_at = now()
            WHERE store = \(store.rawValue) AND order_id = \(orderID) AND state = 'started'
            """)
    }

    /// The store will never finish it (declined, abandoned): later verifications are refused.
    func closed(store: StoreID, orderID: String, reason: String) async throws {
        try await pool.execute(
            """
            UPDATE orders SET state = 'closed', closed_reason = \(String(reason.prefix(500))), updated_at = now()
            WHERE store = \(store.rawValue) AND order_id = \(orderID) AND state = 'started'
            """)
    }

    /// Notes that `clientID` saw `account` proven at `at`.
    func proven(account: String, store: StoreID, clientID: String, at: Date) async throws {
        try await pool.execute(
            """
            INSERT INTO proven_store_accounts (client_id, store, account, proven_at)
            VALUES (\(clientID), \(store.rawValue), \(account), \(at))
            ON CONFLICT (client_id, store, account) DO UPDATE SET proven_at = EXCLUDED.proven_at
            """)
    }

    /// When `clientID` last saw `account` proven, if ever.
    func provenAt(account: String, store: StoreID, clientID: String) async throws -> Date? {
        try await pool.query(
            """
            SELECT proven_at FROM proven_store_accounts
            WHERE client_id = \(clientID) AND store = \(store.rawValue) AND account = \(account)
            """
        ).first?.decode("proven_at", as: Date.self)
    }

    /// The client's catalog price of one `product` in `currency` (`receiptgate products price`).
    func catalogPrice(
        clientID: String, store: StoreID, product: String, currency: String
    ) async throws -> (milliunits: Int64, description: String?)? {
        guard
            let row = try await pool.query(
                """
                SELECT unit_price_milliunits, description FROM product_prices
                WHERE client_id = \(clientID) AND store = \(store.rawValue) AND product_id = \(product)
                  AND currency = \(currency)
                """
            ).first
        else { return nil }
        return (try row.decode("unit_price_milliunits"), try row.decode("description", as: String?.self))
    }

    /// An order as the console lists it.
    struct Listed: Sendable {
        var store: String, orderID: String, clientID: String, playerID: String, storeAccount: String
        var state: String, storeTransactionID: String?, items: [OrderItem], currency: String, createdAt: Date
        var closedReason: String?
    }

    /// The newest orders, of every store or of `store`.
    func latest(store: String?, limit: Int = 50) async throws -> [Listed] {
        try await pool.query(
            """
            SELECT store, order_id, client_id, player_id, store_account, state, store_transaction_id,
                items::text AS items, currency, created_at, closed_reason
            FROM orders WHERE \(store)::text IS NULL OR store = \(store)::text
            ORDER BY created_at DESC LIMIT \(limit)
            """
        ).map { row in
            Listed(
                store: try row.decode("store"), orderID: try row.decode("order_id"),
                clientID: try row.decode("client_id"),
                playerID: try row.decode("player_id"), storeAccount: try row.decode("store_account"),
                state: try row.decode("state"),
                storeTransactionID: try row.decode("store_transaction_id", as: String?.self),
                items: (try? JSONDecoder().decode(
                    [OrderItem].self, from: Data(try row.decode("items", as: String.self).utf8)))
                    ?? [],
                currency: try row.decode("currency"), createdAt: try row.decode("created_at"),
                closedReason: try row.decode("closed_reason", as: String?.self))
        }
    }
}
