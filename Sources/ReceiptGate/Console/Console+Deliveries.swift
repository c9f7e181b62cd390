import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    func deliveries(_ request: HTTPRequest, _ session: ConsoleSession, notice: String? = nil) async throws -> HTTPResponse {
        let status = ["failed", "pending", "all"].contains(request.query["status"] ?? "") ? request.query["status"]! : "failed"
        let clientID = request.query["client"].flatMap { $0.isEmpty ? nil : $0 }
        let type = request.query["type"].flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0.trimmingCharacters(in: .whitespaces) }
        for value in [clientID, type].compactMap({ $0 }) where Identifier.problem(value) != nil {
            return ConsoleLayout.page("Deliveries", session: session, section: "Deliveries", error: "A filter holds a character it may not.", status: 400,
                                      "<h1>Deliveries</h1>")
        }
        let everyClient = try await clients.list()
        let events = try await queries.deliveries(status: status, clientID: clientID, type: type)
        let statuses = [("failed", "Failed"), ("pending", "Waiting"), ("all", "All")].map { value, label -> HTML in
            "<option value=\"\(value)\"\(HTML(markup: value == status ? " selected" : ""))>\(label)</option>"
        }
        let clientOptions = [HTML("<option value=\"\">Every client</option>")] + everyClient.map { client -> HTML in
            "<option value=\"\(client.clientID)\"\(HTML(markup: client.clientID == clientID ? " selected" : ""))>\(client.name) (\(client.clientID))</option>"
        }
        let redeliverOptions = everyClient.map { client -> HTML in "<option value=\"\(client.clientID)\">\(client.name) (\(client.clientID))</option>" }
        return ConsoleLayout.page("Deliveries", session: session, section: "Deliveries", notice: notice, """
            <h1>Deliveries</h1>
            <form method="get" action="/console/deliveries" class="filters">
            <div><label for="status">Status</label> <select id="status" name="status">\(statuses)</select></div>
            <div><label for="client">Client</label> <select id="client" name="client">\(clientOptions)</select></div>
            <div><label for="type">Event type</label> <input id="type" name="type" type="text" value="\(type)" placeholder="e.g. purchase.refunded"></div>
            <div><button type="submit">Filter</button></div></form>
            \(eventTable(events, session: session, id: "deliveries"))
            <h2>Redeliver every failed delivery of a client</h2>
            \(ConsoleLayout.form("/console/deliveries/redeliver-all", session: session, button: "Redeliver all failed", buttonID: "redeliver-all", style: "filters",
                                 "<div><label for=\"redeliver-client\">Client</label> <select id=\"redeliver-client\" name=\"client\">\(redeliverOptions)</select></div>"))
            """)
    }

    func redeliver(_ request: HTTPRequest, _ form: ConsoleForm, _ session: ConsoleSession) async throws -> HTTPResponse {
        let eventID = request.pathParameters["event_id"] ?? ""
        guard try await outbox.redeliver(eventID: eventID) else { return notFound(session, "No event \(eventID).") }
        try await recordAudit(session, "delivery.redeliver", eventID.lowercased())
        var back = request
        back.query = [:]
        return try await deliveries(back, session, notice: "Event \(eventID.lowercased()) is queued for delivery now.")
    }

    func redeliverAll(_ request: HTTPRequest, _ form: ConsoleForm, _ session: ConsoleSession) async throws -> HTTPResponse {
        guard let clientID = form.text("client"), let client = try await clients.find(clientID) else {
            return notFound(session, "Choose a client whose deliveries to send again.")
        }
        guard form.confirmed else {
            return ConsoleLayout.confirmation("Confirm redelivering", question: "Send every failed delivery of \(client.name) again now?",
                                              action: "/console/deliveries/redeliver-all", session: session, button: "Redeliver them all",
                                              hidden: [("client", clientID)], cancel: "/console/deliveries")
        }
        let count = try await queries.redeliverFailed(clientID: clientID)
        try await recordAudit(session, "delivery.redeliver-all", "\(clientID) (\(count))")
        var back = request
        back.query = ["status": "all", "client": clientID]
        return try await deliveries(back, session, notice: "\(count) failed deliveries of \(client.name) are queued for delivery now.")
    }
}
