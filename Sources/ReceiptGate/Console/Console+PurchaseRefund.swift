import Foundation
import ReceiptCore

/// A purchase page's links to its player and client, and what was said about refunding it: the
/// store's refund requests with their answers, and the game's consumption report.
extension Console {
    static func purchaseLinks(_ purchase: OperatorQueries.Purchase, names: ClientNames) -> HTML {
        let clientID = purchase.record.clientID
        let player: HTML = purchase.playerID.map { "Player \(playerLink($0))" } ?? "No player has claimed it"
        return
            "<p id=\"record-links\">\(player) · Client <a href=\"/console/clients/\(HTML.component(clientID))\">\(names.show(clientID))</a></p>"
    }

    func refundSections(_ purchase: OperatorQueries.Purchase, names: ClientNames) async throws -> HTML {
        let record = purchase.record
        let requests = try await RefundRequestRepository(pool: queries.pool).requests(
            store: record.store.rawValue, transactionID: record.transactionID)
        let rows = requests.map { item -> HTML in
            """
            <tr><td class="request">\(Int(item.id))</td><td class="client">\(names.show(item.clientID))</td><td class="reason">\(item.reason)</td>\
            <td class="requested">\(ConsoleTime.show(item.requestedAt))</td><td class="deadline">\(ConsoleTime.show(item.deadline))</td>\
            <td class="status">\(item.status)</td><td class="answer">\(Self.summary(item.answer))</td><td class="outcome">\(item.outcome ?? "")</td></tr>
            """
        }
        let report = try await queries.consumptionReport(of: purchase)
        let consumption: HTML =
            report.map { report in
                ConsoleLayout.details(
                    id: "consumption-report",
                    [
                        ("Delivered", report.report.delivered ? "yes" : "no", "consumption-delivered"),
                        (
                            "Consumed",
                            report.report.consumedMilliunits.map { String(format: "%.1f %%", Double($0) / 1000) }
                                ?? "not said", "consumption-consumed"
                        ),
                        ("Uses recorded", String(report.report.usageEvents.count), nil),
                        ("Reported", ConsoleTime.show(report.receivedAt), nil),
                    ])
            }
            ?? "<p class=\"empty\" id=\"consumption-report-empty\">The game has sent no consumption report for this purchase.</p>"
        return """
            <h2>Refund requests</h2>
            \(ConsoleLayout.table(id: "purchase-refund-requests", caption: "What the store asked before deciding a refund, and the answer sent",
                                  headings: ["Request", "Client", "Reason", "Requested", "Deadline", "Status", "Answer", "Outcome"], rows: rows,
                                  empty: "The store has not asked about refunding this purchase."))
            <h2>Consumption report</h2>
            \(consumption)
            """
    }
}
