import Foundation
import HTTPServer
import ReceiptCore

/// Tokens of purchases made outside the stores' billing: each one's state (waiting for a sale,
/// reported, reported as no sale, refused by the store), the time left to its deadline, and the
/// store's last answer.
extension Console {
    func externalPurchases(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let now = self.now()
        let rows = try await ExternalPurchaseTokenRepository(pool: queries.pool).list(clientID: nil, limit: 200).map {
            token -> HTML in
            let left = token.state == "waiting" ? Self.timeLeft(token.reportBy.timeIntervalSince(now)) : ""
            return """
                <tr><td class="token">\(Int(token.id))</td><td class="client">\(token.clientID)</td><td class="store">\(token.store)</td>\
                <td class="environment">\(token.environment)</td><td class="app">\(token.appIdentifier)</td>\
                <td class="report-id">\(String(token.reportID.prefix(48)))</td><td class="order">\(token.webStore.map { "\($0) " } ?? "")\(token.orderID ?? "")</td>\
                <td class="state">\(Self.stateName(token.state))</td><td class="deadline">\(ConsoleTime.show(token.reportBy))</td>\
                <td class="left">\(left)</td><td class="reports">\(token.reportsSent)</td>\
                <td class="answer">\(String((token.lastError ?? token.lastAnswer ?? "").prefix(200)))</td></tr>
                """
        }
        return ConsoleLayout.page(
            "External purchases", session: session, section: "External purchases",
            """
            <h1>External purchases</h1>
            <p>Tokens of purchases made outside a store's billing (in the game's web shop), and what was
            reported of each to its store: the web sale's lines, its refunds, or no sale by the deadline.</p>
            \(ConsoleLayout.table(id: "external-purchase-tokens", caption: "The latest 200 tokens, newest first",
                                  headings: ["Token", "Client", "Store", "Environment", "App", "Store's id", "Web order", "State", "Deadline", "Time left", "Reports", "Last answer"],
                                  rows: rows, empty: "No external purchase token yet."))
            """)
    }

    /// A state as an operator reads it.
    static func stateName(_ state: String) -> String {
        switch state {
        case "waiting": "waiting for a sale"
        case "sale_queued", "no_sale_queued", "unrecognized_queued", "duplicate_queued": "report on its way"
        case "reported": "reported"
        case "reported_no_sale": "reported as no sale"
        case "reported_unrecognized": "reported as unrecognized"
        case "reported_duplicate": "reported as a duplicate"
        case "refused": "refused"
        default: state
        }
    }

    /// `2 d 3 h`, `5 h 10 min`, `overdue`.
    static func timeLeft(_ seconds: TimeInterval) -> String {
        guard seconds > 0 else { return "overdue" }
        let minutes = Int(seconds) / 60, hours = minutes / 60, days = hours / 24
        if days > 0 { return "\(days) d \(hours % 24) h" }
        if hours > 0 { return "\(hours) h \(minutes % 60) min" }
        return "\(minutes) min"
    }
}
