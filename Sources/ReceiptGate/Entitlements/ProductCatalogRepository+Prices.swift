import Foundation
import Postgres
import ReceiptCore

/// A client's prices of its products, per store and currency (`product_prices`), for the orders
/// the service starts: a line that leaves out its price takes the catalog's. Every change is in
/// the audit log, committed with it.
extension ProductCatalogRepository {
    public struct Price: Sendable, Encodable {
        public let store: String
        public let productID: String
        public let currency: String
        public let unitPriceMilliunits: Int64
        public let description: String?

        enum CodingKeys: String, CodingKey {
            case store, productID = "product_id", currency, unitPriceMilliunits = "price_milliunits", description
        }
    }

    /// Sets the product's price in `currency` (an ISO 4217 code). Throws `CatalogInputInvalid`.
    public func setPrice(
        client: String, store: String, product: String, currency: String, milliunits: Int64, description: String?,
        by who: String
    ) async throws -> Price {
        try Self.checkProduct(product)
        guard currency.utf8.count == 3, currency.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) else {
            throw CatalogInputInvalid(option: "currency", problem: "must be an ISO 4217 code such as USD")
        }
        guard milliunits >= 0 else {
            throw CatalogInputInvalid(option: "price-milliunits", problem: "must be 0 or more")
        }
        if let description, description.isEmpty || description.utf8.count > 512 {
            throw CatalogInputInvalid(option: "description", problem: "must be 1 to 512 bytes")
        }
        try await pool.withTransaction { connection in
            try connection.execute(
                """
                INSERT INTO product_prices (client_id, store, product_id, currency, unit_price_milliunits, description)
                VALUES (\(client), \(store), \(product), \(currency), \(milliunits), \(description))
                ON CONFLICT (client_id, store, product_id, currency) DO UPDATE
                SET unit_price_milliunits = EXCLUDED.unit_price_milliunits, description = EXCLUDED.description,
                    updated_at = now()
                """)
            try ConsoleRepository.audit(
                who: who, action: "product.price", target: "\(client) \(store) \(product) \(milliunits) \(currency)",
                on: connection)
        }
        return Price(
            store: store, productID: product, currency: currency, unitPriceMilliunits: milliunits,
            description: description)
    }

    /// The client's prices, by store, product and currency.
    public func prices(client: String) async throws -> [Price] {
        try await pool.query(
            """
            SELECT store, product_id, currency, unit_price_milliunits, description FROM product_prices
            WHERE client_id = \(client) ORDER BY store, product_id, currency
            """
        ).map {
            Price(
                store: try $0.decode("store"), productID: try $0.decode("product_id"),
                currency: try $0.decode("currency"), unitPriceMilliunits: try $0.decode("unit_price_milliunits"),
                description: try $0.decode("description", as: String?.self))
        }
    }
}
