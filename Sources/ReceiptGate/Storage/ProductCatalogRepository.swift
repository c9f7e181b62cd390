import Foundation
import Postgres
import ReceiptCore

/// A client's catalog: the entitlements (`vip`, `no_ads`) each of its products grants, per store.
/// Every change is audited.
public struct ProductCatalogRepository: Sendable {
    let pool: PostgresPool
    let audit: ConsoleRepository

    init(pool: PostgresPool) {
        self.pool = pool
        audit = ConsoleRepository(pool: pool)
    }

    /// One product's mapping.
    public struct Mapping: Sendable, Equatable, Encodable {
        public let store: String
        public let productID: String
        public let entitlements: [String]
        enum CodingKeys: String, CodingKey { case store, productID = "product_id", entitlements }
    }

    /// An entitlement name: lower-case letters, digits, `_`, `.` or `-`, starting with a letter or
    /// digit, at most 64 characters.
    public static func checkEntitlement(_ name: String) throws(CatalogInputInvalid) {
        let allowed = name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || [0x5F, 0x2E, 0x2D].contains($0) }
        guard (1...64).contains(name.utf8.count), allowed, let first = name.utf8.first, first != 0x5F, first != 0x2E, first != 0x2D else {
            throw CatalogInputInvalid(option: "entitlement", problem: "must be 1–64 lower-case letters, digits, '_', '.' or '-', starting with a letter or digit, got \"\(name)\"")
        }
    }

    public static func checkProduct(_ id: String) throws(CatalogInputInvalid) {
        if let problem = Identifier.problem(id, maxBytes: 200) { throw CatalogInputInvalid(option: "product-id", problem: problem) }
        guard !id.isEmpty else { throw CatalogInputInvalid(option: "product-id", problem: "must not be empty") }
    }

    /// Every client of the game learns the catalog changed (their cached copies know which claims
    /// change what a player owns): an update bumps each one's version and notifies the caches.
    private static func touchGame(of client: String, on connection: PostgresConnection) throws {
        try connection.execute("""
            UPDATE clients SET version = version
            WHERE id = \(client) OR (game_id IS NOT NULL AND game_id = (SELECT game_id FROM clients WHERE id = \(client)))
            """)
    }

    /// Brings what the product's holders own up to date, once every claim that may have checked
    /// the old catalog has ended (a claim made after the change refreshes its player itself).
    private func refreshHolders(client: String, store: String, product: String) async throws {
        let entitlements = EntitlementRepository(pool: pool)
        try await entitlements.waitForRunningTransactions()
        try await entitlements.refreshProduct(client: client, store: store, product: product)
    }

    /// Makes `product` of `store` grant exactly `entitlements` for the client, then brings what
    /// its players own up to date (every player holding the product, in chunks).
    public func set(client: String, store: String, product: String, entitlements: [String], by who: String) async throws -> Mapping {
        try Self.checkProduct(product)
        guard !entitlements.isEmpty, entitlements.count <= 32 else {
            throw CatalogInputInvalid(option: "entitlement", problem: "give 1 to 32 entitlements")
        }
        for name in entitlements { try Self.checkEntitlement(name) }
        let names = Array(Set(entitlements)).sorted()
        try await pool.withTransaction { connection in
            try connection.execute("""
                DELETE FROM product_entitlements WHERE client_id = \(client) AND store = \(store) AND product_id = \(product)
                  AND NOT (entitlement = ANY (\(names)::text[]))
                """)
            for name in names {
                try connection.execute("""
                    INSERT INTO product_entitlements (client_id, store, product_id, entitlement) VALUES (\(client), \(store), \(product), \(name))
                    ON CONFLICT DO NOTHING
                    """)
            }
            try Self.touchGame(of: client, on: connection)
        }
        try await audit.audit(who: who, action: "product.set", target: "\(client) \(store) \(product) → \(names.joined(separator: ","))")
        try await refreshHolders(client: client, store: store, product: product)
        return Mapping(store: store, productID: product, entitlements: names)
    }

    /// Removes the product's mapping (or only `entitlement`), then takes away what it granted;
    /// true if something was removed.
    public func remove(client: String, store: String, product: String, entitlement: String?, by who: String) async throws -> Bool {
        try Self.checkProduct(product)
        if let entitlement { try Self.checkEntitlement(entitlement) }
        let removed = try await pool.withTransaction { connection in
            let removed = try connection.execute("""
                DELETE FROM product_entitlements WHERE client_id = \(client) AND store = \(store) AND product_id = \(product)
                  AND (\(entitlement)::text IS NULL OR entitlement = \(entitlement))
                """)
            if removed > 0 { try Self.touchGame(of: client, on: connection) }
            return removed
        }
        if removed > 0 {
            try await audit.audit(who: who, action: "product.remove", target: "\(client) \(store) \(product)\(entitlement.map { " " + $0 } ?? "")")
            try await refreshHolders(client: client, store: store, product: product)
        }
        return removed > 0
    }

    public func list(client: String) async throws -> [Mapping] {
        let rows = try await pool.query("""
            SELECT store, product_id, array_agg(entitlement ORDER BY entitlement) AS entitlements FROM product_entitlements
            WHERE client_id = \(client) GROUP BY store, product_id ORDER BY store, product_id
            """)
        return try rows.map { Mapping(store: try $0.decode("store"), productID: try $0.decode("product_id"), entitlements: try $0.decode("entitlements")) }
    }
}

/// A catalog option the operator gave is refused; names the option.
public struct CatalogInputInvalid: Error, Sendable, CustomStringConvertible {
    public let option: String
    public let problem: String
    public var description: String { "--\(option) \(problem)" }
}
