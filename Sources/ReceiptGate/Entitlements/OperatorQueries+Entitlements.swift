import Foundation
import Postgres
import ReceiptCore

extension OperatorQueries {
    /// What a player owns, under every client's catalog (the operator sees all), with grants past
    /// their end that the sweep has not removed yet marked as such.
    /// Asked client by client: the primary key leads with the client, so each is one index probe,
    /// where `player_id` alone would read the whole table (no index of its own is kept for this
    /// rare page: every entitlement refresh would pay for it).
    func entitlements(of playerID: String) async throws -> [(clientID: String, grant: EntitlementGrant)] {
        try await pool.query(
            """
            SELECT pe.client_id, \(unescaped: EntitlementRows.columns(of: "pe")) FROM clients c
            JOIN player_entitlements pe ON pe.client_id = c.id AND pe.player_id = \(playerID)
            ORDER BY pe.client_id, pe.entitlement
            """
        ).map { (try $0.decode("client_id", as: String.self), try EntitlementRows.grant($0)) }
    }
}

extension OperatorQueries {
    /// What the ledger holds for a player who owns nothing, to say why: their purchases, those
    /// still in force, and those whose product some client's catalog maps (in force or not).
    struct Holdings: Sendable {
        let purchases: Int, inForce: Int, mapped: Int
        let products: [String]
    }

    func holdings(of playerID: String) async throws -> Holdings {
        let row = try await pool.query(
            """
            SELECT count(*) AS purchases, count(*) FILTER (WHERE t.state = 'active') AS in_force,
                   count(*) FILTER (WHERE EXISTS (SELECT 1 FROM product_entitlements p WHERE p.client_id = t.client_id
                                                  AND p.store = t.store AND p.product_id = t.product_id)) AS mapped,
                   COALESCE(string_agg(DISTINCT t.product_id, ','), '') AS products
            FROM (SELECT t.* FROM clients c JOIN transactions t ON t.client_id = c.id AND t.player_id = \(playerID)
                  ORDER BY t.id DESC LIMIT 1000) t
            """)[0]
        let products: String = try row.decode("products")
        return Holdings(
            purchases: try row.decode("purchases"), inForce: try row.decode("in_force"),
            mapped: try row.decode("mapped"),
            products: products.split(separator: ",").map(String.init))
    }
}
