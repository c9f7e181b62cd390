import Foundation
import Postgres
import ReceiptCore

/// A client's catalog: the entitlements (`vip`, `no_ads`) each of its products grants, per store.
/// A change commits with its audit row and its refresh request (`CatalogRefreshes`); the caller
/// then refreshes the product's holders itself, and whatever it does not finish a service's
/// worker does.
public struct ProductCatalogRepository: Sendable {
    let pool: PostgresPool
    let refresher: CatalogRefresher

    /// What an operator's request (the admin API, the console) spends refreshing before it answers;
    /// the rest of a large game's refresh is the worker's, within seconds.
    public static let interactiveRefreshBudget: Duration = .seconds(3)

    init(pool: PostgresPool) {
        self.pool = pool
        refresher = CatalogRefresher(pool: pool)
    }

    /// One product's mapping.
    public struct Mapping: Sendable, Equatable, Encodable {
        public let store: String
        public let productID: String
        public let entitlements: [String]
        /// What the operator should know of the mapping just set (a consumable never grants).
        public var warning: String?
        enum CodingKeys: String, CodingKey { case store, productID = "product_id", entitlements, warning }
    }

    /// An entitlement name: lower-case letters, digits, `_`, `.` or `-`, starting with a letter or
    /// digit, at most 64 characters.
    public static func checkEntitlement(_ name: String) throws(CatalogInputInvalid) {
        let allowed = name.utf8.allSatisfy {
            (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || [0x5F, 0x2E, 0x2D].contains($0)
        }
        guard (1...64).contains(name.utf8.count), allowed, let first = name.utf8.first, first != 0x5F, first != 0x2E,
            first != 0x2D
        else {
            throw CatalogInputInvalid(
                option: "entitlement",
                problem:
                    "must be 1–64 lower-case letters, digits, '_', '.' or '-', starting with a letter or digit, got \"\(name)\""
            )
        }
    }

    /// A product id, or a product id and one of its purchase options (`product:option`).
    public static func checkProduct(_ id: String) throws(CatalogInputInvalid) {
        if let problem = Identifier.problem(id, maxBytes: 200) {
            throw CatalogInputInvalid(option: "product-id", problem: problem)
        }
        guard !id.isEmpty else { throw CatalogInputInvalid(option: "product-id", problem: "must not be empty") }
    }

    /// Holds the catalog scope of `client` (its game, or itself without one) and `alsoScopes` (a
    /// client moving game: the one it joins) exclusive for the rest of the transaction (`CatalogScopeLock.hold`): waits for
    /// every claim or store event of those scopes in flight (each holds its scope shared from
    /// before it checks its client's version to its commit), and any that comes later waits for
    /// this transaction, then sees the new version and reloads. So no claim decides under a
    /// catalog older than the change and commits after it. Waits at most
    /// `CatalogScopeLock.changeTimeout` (then fails, safe to retry). The ids of every client of
    /// the scopes held, `client` first.
    static func holdGame(
        of client: String, alsoScopes: [String] = [], on connection: PostgresConnection
    ) throws -> [String] {
        guard let scope = try CatalogScopeLock.scope(of: client, on: connection) else { return [] }
        var held = [scope] + alsoScopes
        try CatalogScopeLock.hold(held, on: connection)
        // The client may have moved game while this waited (a move holds both games, so it has
        // committed once this holds the old one): the scope it has now is held too.
        while let now = try CatalogScopeLock.scope(of: client, on: connection), !held.contains(now) {
            try CatalogScopeLock.hold([now], on: connection)
            held.append(now)
        }
        let others = try connection.query(
            """
            SELECT id FROM clients WHERE id <> \(client) AND (CASE WHEN game_id IS NULL THEN 'client:' || id ELSE 'game:' || game_id END) = ANY(\(held)::text[])
            ORDER BY id
            """
        ).map { try $0.decode("id", as: String.self) }
        return [client] + others
    }

    /// Every client of the game learns the catalog changed (their cached copies know which claims
    /// change what a player owns): an update bumps each one's version and notifies the caches.
    static func touch(_ clients: [String], on connection: PostgresConnection) throws {
        try connection.execute("UPDATE clients SET version = version WHERE id = ANY(\(clients)::text[])")
    }

    /// Makes `product` of `store` grant exactly `entitlements` for the client, then brings what
    /// its players own up to date (every player holding the product, in chunks) for at most
    /// `budget` (nil: until done). The same mapping again changes nothing (no audit, no refresh).
    public func set(
        client: String, store: String, product: String, entitlements: [String], by who: String,
        refreshWithin budget: Duration? = nil
    ) async throws -> Mapping {
        try Self.checkProduct(product)
        guard !entitlements.isEmpty, entitlements.count <= 32 else {
            throw CatalogInputInvalid(option: "entitlement", problem: "give 1 to 32 entitlements")
        }
        for name in entitlements { try Self.checkEntitlement(name) }
        let names = Array(Set(entitlements)).sorted()
        let mapping = Mapping(
            store: store, productID: product, entitlements: names,
            warning: try await consumableWarning(client: client, store: store, product: product))
        guard
            try await list(client: client).first(where: { $0.store == store && $0.productID == product })?.entitlements
                != names
        else { return mapping }
        let request = try await pool.withTransaction { connection in
            let game = try Self.holdGame(of: client, on: connection)
            try connection.execute(
                """
                DELETE FROM product_entitlements WHERE client_id = \(client) AND store = \(store) AND product_id = \(product)
                  AND NOT (entitlement = ANY (\(names)::text[]))
                """)
            for name in names {
                try connection.execute(
                    """
                    INSERT INTO product_entitlements (client_id, store, product_id, entitlement) VALUES (\(client), \(store), \(product), \(name))
                    ON CONFLICT DO NOTHING
                    """)
            }
            try Self.touch(game, on: connection)
            try ConsoleRepository.audit(
                who: who, action: "product.set",
                target: "\(client) \(store) \(product) → \(names.joined(separator: ","))", on: connection)
            return try CatalogRefreshes.request(client: client, store: store, product: product, on: connection)
        }
        await refresher.refreshNow([request], within: budget)
        return mapping
    }

    /// A consumable is used up when bought and never grants an entitlement (`EntitlementRules`):
    /// a mapping of a product the ledger holds as one grants nothing, and the operator is told so.
    /// Known only once such a purchase is recorded (a store's catalog is not read).
    func consumableWarning(client: String, store: String, product: String) async throws -> String? {
        let consumable =
            try await pool.query(
                """
                SELECT EXISTS (
                    SELECT 1 FROM transactions t
                    WHERE t.client_id IN (SELECT c.id FROM clients c, clients me WHERE me.id = \(client)
                                          AND (c.id = me.id OR (me.game_id IS NOT NULL AND c.game_id = me.game_id)))
                      AND t.store = \(store) AND t.product_id = \(product) AND t.product_kind = \(ProductKind.consumable.rawValue)
                ) AS consumable
                """
            ).first?.decode("consumable", as: Bool.self) ?? false
        guard consumable else { return nil }
        return "\(product) is a consumable in the ledger: a consumable is used up when bought and grants no"
            + " entitlement, so this mapping grants nothing (map a non-consumable or a subscription)"
    }

    /// Removes the product's mapping (or only `entitlement`), then takes away what it granted (for
    /// at most `budget`, like `set`); true if something was removed.
    public func remove(
        client: String, store: String, product: String, entitlement: String?, by who: String,
        refreshWithin budget: Duration? = nil
    ) async throws -> Bool {
        try Self.checkProduct(product)
        if let entitlement { try Self.checkEntitlement(entitlement) }
        let request = try await pool.withTransaction { connection -> CatalogRefreshes.Request? in
            let game = try Self.holdGame(of: client, on: connection)
            let removed = try connection.execute(
                """
                DELETE FROM product_entitlements WHERE client_id = \(client) AND store = \(store) AND product_id = \(product)
                  AND (\(entitlement)::text IS NULL OR entitlement = \(entitlement))
                """)
            guard removed > 0 else { return nil }
            try Self.touch(game, on: connection)
            try ConsoleRepository.audit(
                who: who, action: "product.remove",
                target: "\(client) \(store) \(product)\(entitlement.map { " " + $0 } ?? "")",
                on: connection)
            return try CatalogRefreshes.request(client: client, store: store, product: product, on: connection)
        }
        guard let request else { return false }
        await refresher.refreshNow([request], within: budget)
        return true
    }

    public func list(client: String) async throws -> [Mapping] {
        let rows = try await pool.query(
            """
            SELECT store, product_id, array_agg(entitlement ORDER BY entitlement) AS entitlements FROM product_entitlements
            WHERE client_id = \(client) GROUP BY store, product_id ORDER BY store, product_id
            """)
        return try rows.map {
            Mapping(
                store: try $0.decode("store"), productID: try $0.decode("product_id"),
                entitlements: try $0.decode("entitlements"))
        }
    }
}

/// A catalog option the operator gave is refused; names the option.
public struct CatalogInputInvalid: Error, Sendable, CustomStringConvertible {
    public let option: String
    public let problem: String
    public var description: String { "--\(option) \(problem)" }
}
