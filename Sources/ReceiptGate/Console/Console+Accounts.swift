import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    func accounts(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        try await accountsPage(request.query["account"]?.trimmingCharacters(in: .whitespaces), session)
    }

    private func accountsPage(
        _ text: String?, _ session: ConsoleSession, notice: String? = nil
    ) async throws -> HTTPResponse {
        let query = text?.isEmpty == false ? text : nil
        var content: HTML = """
            <h1>Accounts</h1>
            <form method="get" action="/console/accounts" class="filters"><div><label for="account">Account id or e-mail</label>
            <input id="account" name="account" type="search" value="\(query)"></div><div><button type="submit">Look up</button></div></form>
            """
        if let query {
            guard Identifier.problem(query) == nil else {
                return ConsoleLayout.page(
                    "Accounts", session: session, section: "Accounts",
                    error: "The search holds a character it may not.", status: 400, content)
            }
            let found = try await queries.accounts(matching: query)
            if found.isEmpty { content += "<p class=\"empty\" id=\"account-empty\">No account matches.</p>" }
            for account in found { content += try await accountSection(account, session) }
        }
        return ConsoleLayout.page("Accounts", session: session, section: "Accounts", notice: notice, content)
    }

    private func accountSection(_ account: OperatorQueries.Account, _ session: ConsoleSession) async throws -> HTML {
        let links = try await queries.linkedPurchases(accountID: account.id)
        let families = try await queries.tokenFamilies(accountID: account.id)
        let linkRows = links.map { link -> HTML in
            let transaction: HTML =
                link.purchase.map { "<a href=\"\(Self.purchasePath($0.record))\">\($0.record.transactionID)</a>" }
                ?? "not in the ledger"
            return
                "<tr><td>\(link.store)</td><td>\(link.original)</td><td>\(transaction)</td><td>\(link.purchase?.record.state.rawValue)</td><td>\(ConsoleTime.show(link.linkedAt))</td></tr>"
        }
        let entitlements = links.compactMap(\.purchase).filter { $0.record.state == .active }.map { purchase -> HTML in
            "<tr><td>\(purchase.record.productID)</td><td>\(purchase.record.store.rawValue)</td><td>\(ConsoleTime.show(purchase.record.expiresDate))</td></tr>"
        }
        let familyRows = families.map { family -> HTML in
            "<tr><td><code>\(family.family)</code></td><td>\(family.kinds)</td><td>\(family.issued)</td><td class=\"live\">\(family.live ? "live" : "ended")</td><td>\(ConsoleTime.show(family.lastExpiry))</td></tr>"
        }
        let revoke =
            families.contains(where: \.live)
            ? ConsoleLayout.form(
                "/console/accounts/\(HTML.component(account.id))/revoke-sessions", session: session,
                button: "Revoke every session",
                buttonID: "revoke-sessions")
            : HTML("<p>No live session.</p>")
        return """
            <h2>Account \(account.id)</h2>
            \(ConsoleLayout.details(id: "account", [("Account id", account.id, nil), ("Username", account.username, nil), ("E-mail", account.email ?? "", nil),
                                                   ("E-mail confirmed", account.emailVerified ? "yes" : "no", nil), ("Client", account.clientID, nil),
                                                   ("Scope", account.scope, nil), ("Created", ConsoleTime.show(account.createdAt), nil)]))
            <h3>Linked purchases</h3>\(ConsoleLayout.table(id: "linked-purchases", caption: "Purchases linked to this account",
                                                          headings: ["Store", "Original transaction", "Latest transaction", "State", "Linked"], rows: linkRows))
            <h3>Entitlements</h3>\(ConsoleLayout.table(id: "entitlements", caption: "Linked purchases in force", headings: ["Product", "Store", "Expires"],
                                                      rows: entitlements, empty: "No entitlement in force."))
            <h3>Sessions (token families)</h3>\(ConsoleLayout.table(id: "token-families", caption: "Each sign-in and its refreshes",
                                                                   headings: ["Family", "Kinds", "Tokens issued", "State", "Last expiry"], rows: familyRows,
                                                                   empty: "No tokens issued."))
            \(revoke)
            """
    }

    func revokeSessions(
        _ request: HTTPRequest, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        let accountID = request.pathParameters["account_id"] ?? ""
        guard Identifier.problem(accountID) == nil, !(try await queries.accounts(matching: accountID)).isEmpty else {
            return notFound(session, "No account \(accountID).")
        }
        guard form.confirmed else {
            return ConsoleLayout.confirmation(
                "Confirm revoking sessions",
                question: "Revoke every session of account \(accountID)? Each device must sign in again.",
                action: "/console/accounts/\(HTML.component(accountID))/revoke-sessions", session: session,
                button: "Revoke every session", cancel: "/console/accounts?account=\(HTML.component(accountID))")
        }
        let revoked = try await queries.revokeSessions(accountID: accountID)
        try await recordAudit(session, "account.revoke-sessions", accountID)
        return try await accountsPage(
            accountID, session, notice: "\(revoked) tokens revoked: every session of this account has ended.")
    }
}
