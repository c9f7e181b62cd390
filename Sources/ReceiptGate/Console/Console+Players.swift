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
        let rows = try await queries.entitlements(of: playerID).map { owned -> HTML in
            let grant = owned.grant
            let state =
                !EntitlementRules.holds(expires: grant.expiresDate, grace: grant.gracePeriodExpiresDate, at: now)
                ? "ended (not yet swept)"
                : EntitlementRules.inGracePeriod(
                    expires: grant.expiresDate, grace: grant.gracePeriodExpiresDate, at: now)
                    ? "in grace period" : "active"
            return """
                <tr><td class="client">\(owned.clientID)</td><td class="entitlement">\(grant.entitlement)</td><td class="store">\(grant.store.rawValue)</td>
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
                                  rows: rows, empty: "The player owns no entitlement (no catalog maps a product they hold)."))
            """)
    }
}
