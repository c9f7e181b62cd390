import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    static func playerPath(_ playerID: String) -> String { "/console/players/\(HTML.component(playerID))" }

    /// A player: what they own under each client's catalog, and where their purchases are.
    func player(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let playerID = request.pathParameters["player_id"] ?? ""
        if let problem = Identifier.problem(playerID) {
            return ConsoleLayout.page(
                "Player", session: session, section: "Purchases", error: "The player id \(problem).", status: 400,
                "<h1>Player</h1>")
        }
        let now = self.now()
        let names = ClientNames(try await clients.list())
        let rows = try await queries.entitlements(of: playerID).map { owned -> HTML in
            let grant = owned.grant
            let state =
                !EntitlementRules.holds(expires: grant.expiresDate, grace: grant.gracePeriodExpiresDate, at: now)
                ? "ended (not yet swept)"
                : EntitlementRules.inGracePeriod(
                    expires: grant.expiresDate, grace: grant.gracePeriodExpiresDate, at: now)
                    ? "in grace period" : "active"
            return """
                <tr><td class="client">\(names.show(owned.clientID))</td><td class="entitlement">\(grant.entitlement)</td><td class="store">\(grant.store.rawValue)</td>
                <td class="product">\(grant.productID)</td>
                <td><a href="/console/purchases/\(HTML.component(grant.store.rawValue))/\(HTML.component(grant.transactionID))">\(grant.transactionID)</a></td>
                <td class="expires">\(grant.expiresDate.map(ConsoleTime.show) ?? "never")</td><td class="renews">\(grant.willRenew.map { $0 ? "yes" : "no" } ?? "not known yet")</td>
                <td class="state">\(state)</td><td class="ownership">\(grant.ownership?.rawValue ?? Ownership.purchased.rawValue)</td></tr>
                """
        }
        return ConsoleLayout.page(
            "Player \(playerID)", session: session, section: "Purchases",
            """
            <h1>Player \(playerID)</h1>
            <p class="hint">What the player owns now under each client's product catalog, and the purchase granting each entitlement.
            <a href="/console/purchases?q=\(HTML.component(playerID))">The player's purchases</a>.</p>
            \(ConsoleLayout.table(id: "entitlements", caption: "Entitlements",
                                  headings: ["Client", "Entitlement", "Store", "Product", "Transaction", "Expires", "Renews", "State", "Ownership"],
                                  rows: rows, empty: rows.isEmpty ? try await whyNothing(playerID) : ""))
            """)
    }

    /// Why a player owns nothing, in the terms an operator can act on.
    private func whyNothing(_ playerID: String) async throws -> String {
        let held = try await queries.holdings(of: playerID)
        if held.purchases == 0 {
            return
                "The player owns nothing: no purchase is on record for the player id \(playerID) (ids are compared exactly, case included; a purchase counts once a game has verified it for the player)."
        }
        if held.mapped == 0 {
            return
                "The player owns nothing: none of their \(held.purchases) purchases is of a product a client's catalog maps to an entitlement (\(held.products.joined(separator: ", "))); map them with `receiptgate products set` or the client's Products page."
        }
        return
            "The player owns nothing now: \(held.purchases) purchases are on record, \(held.inForce) still in force, and what their mapped products granted has ended (refunded, revoked or expired)."
    }
}
