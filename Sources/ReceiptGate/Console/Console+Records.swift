import Foundation
import HTTPServer

/// The read-only pages: store notifications and the audit log.
extension Console {
    func notifications(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let rows = try await queries.notifications().map { notification -> HTML in
            let fields = notification.noticeFields.map { field -> HTML in
                let style = field.name.hasSuffix("token") ? "confirmation-token" : "notice-field"
                return "<br>\(field.name): <code class=\"\(style)\">\(field.value)</code>"
            }
            let notice: HTML = notification.notice.map { "<strong>\($0)</strong>\(fields)" } ?? ""
            return """
                <tr><td>\(ConsoleTime.show(notification.receivedAt))</td><td class="store">\(notification.store)</td><td class="type">\(notification.type)</td>
                <td>\(notification.subtype)</td><td class="outcome">\(notification.processed ? "applied" : "received")</td><td>\(notification.transactionID)</td>
                <td>\(notice)</td></tr>
                """
        }
        return ConsoleLayout.page(
            "Notifications", session: session, section: "Notifications",
            """
            <h1>Notifications</h1>
            <p class="hint">What the stores pushed, newest first. A notification is a hint: the ledger changes only on what the store's API confirms.</p>
            \(ConsoleLayout.table(id: "notifications", caption: "The 100 newest store notifications",
                                  headings: ["Received", "Store", "Type", "Subtype", "Outcome", "Transaction", "For the operator"], rows: rows,
                                  empty: "No notification received yet."))
            """)
    }

    func auditLog(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let rows = try await audit.auditLog().map { entry -> HTML in
            "<tr><td class=\"when\">\(ConsoleTime.show(entry.at))</td><td class=\"who\">\(entry.who)</td><td class=\"action\">\(entry.action)</td><td class=\"target\">\(entry.target)</td></tr>"
        }
        return ConsoleLayout.page(
            "Audit log", session: session, section: "Audit log",
            """
            <h1>Audit log</h1>
            \(ConsoleLayout.table(id: "audit", caption: "Every console action, newest first (the 200 latest)", headings: ["When", "Who", "Action", "Target"],
                                  rows: rows, empty: "No action yet."))
            """)
    }
}
