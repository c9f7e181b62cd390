import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    func registerClients(on router: inout Router) {
        page(&router, "/console/clients") { _, session in try await clientList(session) }
        page(&router, "/console/clients/new") { _, session in
            ConsoleLayout.page(
                "New client", session: session, section: "Clients",
                "<h1>New client</h1>\(clientForm(action: "/console/clients", shown: nil, session: session, button: "Create client"))"
            )
        }
        action(&router, "/console/clients") { _, form, session in try await createClient(form, session) }
        page(&router, "/console/clients/{client_id}") { request, session in
            try await clientPage(request.pathParameters["client_id"] ?? "", session)
        }
        action(&router, "/console/clients/{client_id}") { request, form, session in
            try await updateClient(request.pathParameters["client_id"] ?? "", form, session)
        }
        action(&router, "/console/clients/{client_id}/rotate") { request, form, session in
            try await rotateClient(request.pathParameters["client_id"] ?? "", form, session)
        }
        registerProducts(on: &router)
        action(&router, "/console/clients/{client_id}/disable") { request, form, session in
            try await disableClient(request.pathParameters["client_id"] ?? "", form, session)
        }
    }

    private func clientList(_ session: ConsoleSession) async throws -> HTTPResponse {
        let rows = try await clients.list().map { client -> HTML in
            """
            <tr><td><a href="/console/clients/\(HTML.component(client.clientID))">\(client.name)</a></td><td class="client-id"><code>\(client.clientID)</code></td>
            <td class="status">\(client.disabled ? "disabled" : "active")</td><td>\(client.environments.map(\.rawValue).joined(separator: ", "))</td>
            <td>\(client.webhookURL ?? "")</td></tr>
            """
        }
        return ConsoleLayout.page(
            "Clients", session: session, section: "Clients",
            """
            <h1>Clients</h1><p><a id="new-client" href="/console/clients/new">New client</a></p>
            \(ConsoleLayout.table(id: "clients", caption: "Every API client", headings: ["Name", "Client id", "Status", "Environments", "Webhook URL"],
                                  rows: rows, empty: "No clients yet."))
            """)
    }

    private func createClient(_ form: ConsoleForm, _ session: ConsoleSession) async throws -> HTTPResponse {
        let created: (client: Client, secret: String)
        do {
            var settings = try input.settings(settingValues(form, creating: true))
            guard settings.name != nil else { throw InvalidClientSetting(option: "name", problem: "is required") }
            if settings.environments == nil, let implied = input.impliedEnvironments(settings) {
                settings.environments = implied
            }
            try input.checkSchemes(settings, alreadyAllowsInsecure: false)
            created = try await clients.create(settings)
        } catch let invalid as InvalidClientSetting {
            return ConsoleLayout.page(
                "New client", session: session, section: "Clients", error: Self.problem(invalid), status: 422,
                "<h1>New client</h1>\(clientForm(action: "/console/clients", shown: form, session: session, button: "Create client"))"
            )
        }
        try await recordAudit(session, "client.create", created.client.clientID)
        return ConsoleLayout.page(
            "Client created", session: session, section: "Clients", status: 201,
            """
            <h1>Client created</h1>
            <p>Client id: <code id="new-client-id">\(created.client.clientID)</code></p>
            \(Self.secretOnce(created.secret))
            <p><a href="/console/clients/\(HTML.component(created.client.clientID))">Open \(created.client.name)</a></p>
            """)
    }

    func clientPage(
        _ clientID: String, _ session: ConsoleSession, notice: String? = nil, error: String? = nil,
        status: Int = 200
    ) async throws -> HTTPResponse {
        guard let client = try await clients.find(clientID) else { return notFound(session, "No client \(clientID).") }
        let apps = client.appIdentifiers.sorted { $0.key < $1.key }.map {
            "\($0.key): \($0.value.joined(separator: ", "))"
        }.joined(separator: "; ")
        let settings = client.settings.sorted { $0.key < $1.key }.map {
            "\($0.key) = \($0.value.joined(separator: ", "))"
        }.joined(separator: "; ")
        let details = ConsoleLayout.details(
            id: "client",
            [
                ("Client id", client.clientID, "client-id"),
                ("Status", client.disabled ? "disabled" : "active", "client-status"),
                ("Environments", client.environments.map(\.rawValue).joined(separator: ", "), nil),
                ("Game id", client.gameID.map(String.init) ?? "", nil),
                ("Webhook URL", client.webhookURL ?? "", nil),
                ("Refund callback URL", client.refundCallbackURL ?? "", nil),
                ("Delivery URL", client.deliveryURL ?? "", nil), ("Apps", apps, "client-apps"),
                ("Settings", settings, nil),
                ("Secret settings", client.hasSealedSettings ? "set" : "none", nil),
                ("Created", ConsoleTime.show(client.createdAt), nil),
                ("Secret rotated", ConsoleTime.show(client.secretRotatedAt), nil),
            ])
        let base = "/console/clients/\(HTML.component(client.clientID))"
        let actions: HTML =
            client.disabled
            ? "<p>This client is disabled: its secret and tokens no longer work.</p>"
            : """
            \(ConsoleLayout.form(base + "/rotate", session: session, button: "Rotate secret", buttonID: "rotate"))
            \(ConsoleLayout.form(base + "/disable", session: session, button: "Disable client", buttonID: "disable"))
            """
        return ConsoleLayout.page(
            client.name, session: session, section: "Clients", notice: notice, error: error, status: status,
            """
            <h1>\(client.name)</h1>\(details)
            <h2>Actions</h2>\(actions)
            <h2>Products</h2>\(try await productsSection(client, session: session))
            <h2>Edit</h2>\(clientForm(action: base, shown: client, session: session, button: "Save changes"))
            """)
    }

    private func updateClient(
        _ clientID: String, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        guard let current = try await clients.find(clientID) else { return notFound(session, "No client \(clientID).") }
        do {
            let settings = try input.settings(settingValues(form, creating: false))
            try input.checkSchemes(settings, alreadyAllowsInsecure: current.allowsInsecureURLs)
            _ = try await clients.update(clientID, settings)
        } catch let invalid as InvalidClientSetting {
            return try await clientPage(clientID, session, error: Self.problem(invalid), status: 422)
        }
        try await recordAudit(session, "client.update", clientID)
        return try await clientPage(clientID, session, notice: "Saved.")
    }

    private func rotateClient(
        _ clientID: String, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        guard let client = try await clients.find(clientID) else { return notFound(session, "No client \(clientID).") }
        guard form.confirmed else {
            return ConsoleLayout.confirmation(
                "Confirm rotating the secret",
                question:
                    "Rotate the secret of \(client.name)? The current secret and every token issued with it stop working at once.",
                action: "/console/clients/\(HTML.component(clientID))/rotate", session: session,
                button: "Rotate the secret",
                cancel: "/console/clients/\(HTML.component(clientID))")
        }
        let secret = try await clients.rotateSecret(clientID)
        try await recordAudit(session, "client.rotate", clientID)
        return ConsoleLayout.page(
            "Secret rotated", session: session, section: "Clients",
            """
            <h1>Secret rotated</h1><p>New secret of <a href="/console/clients/\(HTML.component(clientID))">\(client.name)</a>:</p>
            \(Self.secretOnce(secret))
            """)
    }

    private func disableClient(
        _ clientID: String, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        guard let client = try await clients.find(clientID) else { return notFound(session, "No client \(clientID).") }
        guard form.confirmed else {
            return ConsoleLayout.confirmation(
                "Confirm disabling the client",
                question: "Disable \(client.name)? Its requests are refused from now on, in every process.",
                action: "/console/clients/\(HTML.component(clientID))/disable", session: session,
                button: "Disable the client",
                cancel: "/console/clients/\(HTML.component(clientID))")
        }
        _ = try await clients.disable(clientID)
        try await recordAudit(session, "client.disable", clientID)
        return ConsoleLayout.redirect("/console/clients/\(HTML.component(clientID))")
    }

    /// A new secret, this once: the page that shows it is the only place it is ever rendered.
    static func secretOnce(_ secret: String) -> HTML {
        """
        <div class="secret"><code id="new-secret">\(secret)</code><button type="button" class="copy" data-copy="new-secret">Copy</button></div>
        <p class="notice" role="status">Store this secret now: it is not shown again.</p>
        """
    }

    static func problem(_ invalid: InvalidClientSetting) -> String {
        "\(invalid.option.replacingOccurrences(of: "-", with: " ").capitalizedFirst) \(invalid.problem)."
    }

    func notFound(_ session: ConsoleSession, _ message: String) -> HTTPResponse {
        ConsoleLayout.page("Not found", session: session, error: message, status: 404, "<h1>Not found</h1>")
    }
}

extension String {
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
