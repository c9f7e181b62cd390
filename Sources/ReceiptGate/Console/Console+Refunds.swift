import Foundation
import HTTPServer
import ReceiptCore

/// Refund requests stores asked: pending with their deadlines, answered with what was sent, and
/// the store's outcome; refund rates per client and product.
extension Console {
    func refunds(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let repository = RefundRequestRepository(pool: queries.pool)
        let names = ClientNames(try await clients.list())
        let rows = try await repository.recent(limit: 100).map { item -> HTML in
            return """
                <tr><td class="request">\(Int(item.id))</td><td class="client">\(names.show(item.clientID))</td><td class="store">\(item.store)</td>\
                <td class="transaction"><a href="/console/purchases/\(HTML.component(item.store))/\(HTML.component(item.transactionID))">\(ConsoleText.short(item.transactionID))</a></td><td class="product">\(item.productID)</td><td class="reason">\(item.reason)</td>\
                <td class="requested">\(ConsoleTime.show(item.requestedAt))</td><td class="deadline">\(ConsoleTime.show(item.deadline))</td><td class="status">\(item.status)</td>\
                <td class="answer">\(Self.summary(item.answer))</td><td class="outcome">\(item.outcome ?? "")</td></tr>
                """
        }
        let rates = try await repository.rates().map { rate -> HTML in
            let share =
                rate.requests == 0 ? "" : String(format: "%.0f %%", Double(rate.refunded) * 100 / Double(rate.requests))
            return
                "<tr><td class=\"client\">\(names.show(rate.clientID))</td><td class=\"product\">\(rate.productID)</td><td class=\"requests\">\(rate.requests)</td><td class=\"refunded\">\(rate.refunded)</td><td class=\"declined\">\(rate.declined)</td><td class=\"rate\">\(share)</td></tr>"
        }
        return ConsoleLayout.page(
            "Refund requests", session: session, section: "Refunds",
            """
            <h1>Refund requests</h1>
            <p>Stores ask before they decide some refunds; each request is answered once, before its deadline, from the game's
            consumption report and the client's policy (<a href="/console/clients">Clients</a>).</p>
            \(ConsoleLayout.table(id: "refund-requests", caption: "The latest 100 requests, newest first",
                                  headings: ["Request", "Client", "Store", "Transaction", "Product", "Reason", "Requested", "Deadline", "Status", "Answer", "Outcome"],
                                  rows: rows, empty: "No store has asked about a refund yet."))
            <h2>Refund rates</h2>
            \(ConsoleLayout.table(id: "refund-rates", caption: "Requests in the last 90 days per client and product, and how the stores decided",
                                  headings: ["Client", "Product", "Requests", "Refunded", "Declined", "Refunded share"], rows: rates,
                                  empty: "No requests in the last 90 days."))
            """)
    }

    /// The decided answer in a few words: the preference, delivery and consumption sent.
    static func summary(_ answer: String?) -> String {
        guard let answer, let data = answer.data(using: .utf8),
            let decided = try? ConsumptionReports.decoder.decode(RefundAnswer.self, from: data)
        else { return "" }
        var parts = [decided.preference.rawValue]
        if let delivered = decided.delivered { parts.append(delivered ? "delivered" : "not delivered") }
        if let consumed = decided.consumedMilliunits {
            parts.append(String(format: "%.1f %% consumed", Double(consumed) / 1000))
        }
        if !decided.customerConsented { parts.append("no consumption data (no consent)") }
        if decided.policyOnly { parts.append("policy alone") }
        return parts.joined(separator: ", ")
    }
}
