import Foundation
import HTTPServer

/// Consent revocations (a parent withdrawing a minor's consent to the app): the game must act on
/// each one, so every one is listed, with the players it named or "no player known" when the
/// ledger knew none under the buyer's account (then no webhook was sent).
extension Console {
    func consentRevocations(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let rows = try await ConsentRevocationQueries(pool: queries.pool).latest(limit: 200).map { row -> HTML in
            let players: HTML =
                row.playerIDs.isEmpty
                ? "<em>no player known</em>"
                : HTML(
                    markup: row.playerIDs.map { player in
                        "<a href=\"/console/players/\(HTML.component(player))\">\(HTML.escape(player))</a>"
                    }.joined(separator: ", "))
            let told = row.webhookQueued ? "webhook sent" : row.playerIDs.isEmpty ? "nobody to tell" : "no webhook URL"
            return """
                <tr><td class="received">\(ConsoleTime.show(row.receivedAt))</td><td class="revoked">\(ConsoleTime.show(row.revokedAt))</td>\
                <td class="client">\(row.clientID ?? "no client")</td><td class="store">\(row.store)</td>\
                <td class="environment">\(row.environment)</td><td class="app">\(row.appIdentifier)</td>\
                <td class="app-transaction">\(row.appTransactionID ?? "not named")</td><td class="players">\(players)</td>\
                <td class="told">\(told)</td><td class="notification">\(row.notificationID)</td></tr>
                """
        }
        return ConsoleLayout.page(
            "Consent", session: session, section: "Consent",
            """
            <h1>Consent revocations</h1>
            <p>A store tells when the buyer's consent to use the app is withdrawn (a parent rescinding a
            minor's consent). The game must stop these players' access and delete what the law asks: its
            webhook receives <code>player.consent_revoked</code> naming them, when any is known.</p>
            \(ConsoleLayout.table(id: "consent-revocations", caption: "The latest 200, newest first",
                                  headings: ["Received", "Revoked", "Client", "Store", "Environment", "App", "Buyer's app account", "Players", "Told", "Notification"],
                                  rows: rows, empty: "No consent revocation yet."))
            """)
    }
}
