import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    func deliveries(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let status =
            ["failed", "pending", "all"].contains(request.query["status"] ?? "") ? request.query["status"]! : "failed"
        let clientID = request.query["client"].flatMap { $0.isEmpty ? nil : $0 }
        let type = request.query["type"].flatMap {
            $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0.trimmingCharacters(in: .whitespaces)
        }
        for value in [clientID, type].compactMap({ $0 }) where Identifier.problem(value) != nil {
            return ConsoleLayout.page(
                "Deliveries", session: session, section: "Deliveries", error: "A filter holds a character it may not.",
                status: 400,
                "<h1>Deliveries</h1>")
        }
        let everyClient = try await clients.list()
        let events = try await queries.deliveries(status: status, clientID: clientID, type: type)
        let statuses = [
            ("failed", "Failed (dead, or pending after a failure)"), ("pending", "Pending"), ("all", "All"),
        ].map { value, label -> HTML in
            "<option value=\"\(value)\"\(HTML(markup: value == status ? " selected" : ""))>\(label)</option>"
        }
        let clientOptions =
            [HTML("<option value=\"\">Every client</option>")]
            + everyClient.map { client -> HTML in
                "<option value=\"\(client.clientID)\"\(HTML(markup: client.clientID == clientID ? " selected" : ""))>\(client.name) (\(client.clientID))</option>"
            }
        let redeliverOptions = everyClient.map { client -> HTML in
            "<option value=\"\(client.clientID)\">\(client.name) (\(client.clientID))</option>"
        }
        var back = "/console/deliveries?status=\(status)"
        if let clientID { back += "&client=\(HTML.component(clientID))" }
        if let type { back += "&type=\(HTML.component(type))" }
        return ConsoleLayout.page(
            "Deliveries", session: session, section: "Deliveries", notice: Self.redeliveryNotice(request),
            """
            <h1>Deliveries</h1>
            <form method="get" action="/console/deliveries" class="filters">
            <div><label for="status">Status</label> <select id="status" name="status">\(statuses)</select></div>
            <div><label for="client">Client</label> <select id="client" name="client">\(clientOptions)</select></div>
            <div><label for="type">Event type</label> <input id="type" name="type" type="text" value="\(type)" placeholder="e.g. transaction.refunded"></div>
            <div><button type="submit">Filter</button></div></form>
            \(eventTable(events, session: session, id: "deliveries", back: back, names: ClientNames(everyClient)))
            <h2>Redeliver every failed delivery of a client</h2>
            \(ConsoleLayout.form("/console/deliveries/redeliver-all", session: session, button: "Redeliver all failed", buttonID: "redeliver-all", style: "filters",
                                 "<div><label for=\"redeliver-client\">Client</label> <select id=\"redeliver-client\" name=\"client\">\(redeliverOptions)</select></div>"))
            """)
    }

    /// Queues the event, then sends the browser back where it was (a reload does not redeliver again).
    func redeliver(_ request: HTTPRequest, _ form: ConsoleForm, _ session: ConsoleSession) async throws -> HTTPResponse
    {
        let eventID = request.pathParameters["event_id"] ?? ""
        guard let event = UUID(uuidString: eventID), try await outbox.redeliver(eventID: eventID) else {
            return notFound(session, "No event \(eventID).")
        }
        try await recordAudit(session, "delivery.redeliver", event.uuidString.lowercased())
        return ConsoleLayout.redirect(Self.localPath(form["back"]) + "redelivered=\(event.uuidString.lowercased())")
    }

    /// A page of ours to return to, ready for one more query parameter; anything else is the deliveries page.
    static func localPath(_ back: String?) -> String {
        guard let back, back.hasPrefix("/console/"), !back.contains("//"), !back.contains("\\"),
            Identifier.problem(back) == nil
        else {
            return "/console/deliveries?status=all&"
        }
        return back + (back.contains("?") ? "&" : "?")
    }

    /// What the redirect after a redelivery asked a page to say.
    static func redeliveryNotice(_ request: HTTPRequest) -> String? {
        if let event = request.query["redelivered"].flatMap(UUID.init(uuidString:)) {
            return "Event \(event.uuidString.lowercased()) is queued for delivery now."
        }
        if let count = request.query["requeued"].flatMap(Int.init), let client = request.query["client"] {
            return "\(count) failed deliveries of \(client) are queued for delivery now."
        }
        return nil
    }

    func redeliverAll(
        _ request: HTTPRequest, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        guard let clientID = form.text("client"), let client = try await clients.find(clientID) else {
            return notFound(session, "Choose a client whose deliveries to send again.")
        }
        guard form.confirmed else {
            return ConsoleLayout.confirmation(
                "Confirm redelivering", question: "Send every failed delivery of \(client.name) again now?",
                action: "/console/deliveries/redeliver-all", session: session, button: "Redeliver them all",
                hidden: [("client", clientID)], cancel: "/console/deliveries")
        }
        let count = try await queries.redeliverFailed(clientID: clientID)
        try await recordAudit(session, "delivery.redeliver-all", "\(clientID) (\(count))")
        return ConsoleLayout.redirect(
            "/console/deliveries?status=all&client=\(HTML.component(clientID))&requeued=\(count)")
    }
}
