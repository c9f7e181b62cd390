import Foundation
import HTTPServer

/// The frame every console page shares: head, header with the purchase search and the
/// navigation, and the headers that keep the page to itself (no inline script, nothing from
/// another origin, not framed, not cached).
enum ConsoleLayout {
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    static let sections: [(title: String, path: String)] = [
        ("Overview", "/console"), ("Analytics", "/console/analytics"), ("Clients", "/console/clients"),
        ("Purchases", "/console/purchases"),
        ("Deliveries", "/console/deliveries"), ("Accounts", "/console/accounts"),
        ("Notifications", "/console/notifications"), ("Consent", "/console/consent"),
        ("Refunds", "/console/refunds"), ("External purchases", "/console/external-purchases"),
        ("Audit log", "/console/audit"),
    ]

    /// A page for a signed-in operator (`session`), or the sign-in page (no session: no header).
    static func page(
        _ title: String, session: ConsoleSession?, section: String? = nil, notice: String? = nil, error: String? = nil,
        status: Int = 200, headers extra: [(String, String)] = [], _ content: HTML
    ) -> HTTPResponse {
        var body: HTML = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · ReceiptGate console</title>
            <link rel="stylesheet" href="/console/assets/console.css"><script src="/console/assets/console.js" defer></script>
            </head><body>
            """
        if let session { body += header(session: session, section: section) }
        body += "<main>"
        if let notice { body += "<p class=\"notice\" role=\"status\">\(notice)</p>" }
        if let error { body += "<p class=\"error\" role=\"alert\">\(error)</p>" }
        body += content
        body += "</main></body></html>\n"
        var response = HTTPResponse(status: status, body: Data(body.markup.utf8))
        response.headers.add("Content-Type", "text/html; charset=utf-8")
        for (name, value) in securityHeaders + extra { response.headers.add(name, value) }
        return response
    }

    static let securityHeaders: [(String, String)] = [
        ("Content-Security-Policy", contentSecurityPolicy), ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"), ("Cache-Control", "no-store"), ("X-Frame-Options", "DENY"),
    ]

    static var notFound: HTTPResponse {
        page(
            "Not found", session: nil, status: 404,
            "<h1>Not found</h1><p><a href=\"/console\">Back to the console</a></p>")
    }

    static func redirect(_ location: String, headers extra: [(String, String)] = []) -> HTTPResponse {
        var response = HTTPResponse(status: 303)
        response.headers.add("Location", location)
        for (name, value) in securityHeaders + extra { response.headers.add(name, value) }
        return response
    }

    private static func header(session: ConsoleSession, section: String?) -> HTML {
        let links = sections.map { item -> HTML in
            item.title == section
                ? "<li><a href=\"\(item.path)\" aria-current=\"page\">\(item.title)</a></li>"
                : "<li><a href=\"\(item.path)\">\(item.title)</a></li>"
        }
        return """
            <header><div class="bar"><a class="brand" href="/console">ReceiptGate</a>
            <form method="get" action="/console/purchases" role="search" class="search">
            <label for="q">Search purchases</label><input id="q" name="q" type="search" placeholder="transaction, order, player or account">
            <button type="submit">Search</button></form>
            <form method="post" action="/console/sign-out" class="sign-out">\(csrfField(session))<button type="submit">Sign out</button></form>
            </div><nav aria-label="Console"><ul>\(links)</ul></nav></header>
            """
    }

    static func csrfField(_ session: ConsoleSession) -> HTML {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(session.csrf)\">"
    }

    /// A form posting to `action` with the CSRF token; `confirm` adds the server-side confirmation step's mark.
    static func form(
        _ action: String, session: ConsoleSession, button: String, buttonID: String? = nil,
        hidden: [(String, String)] = [],
        confirmed: Bool = false, style: String = "inline", _ fields: HTML = ""
    ) -> HTML {
        let hiddenFields = hidden.map { HTML("<input type=\"hidden\" name=\"\($0.0)\" value=\"\($0.1)\">") }
        let id: HTML = buttonID.map { "id=\"\($0)\" " } ?? ""
        return """
            <form method="post" action="\(action)" class="\(style)">\(csrfField(session))\(hiddenFields)\(confirmed ? HTML("<input type=\"hidden\" name=\"confirm\" value=\"yes\">") : HTML(""))\(fields)<button \(id)type="submit">\(button)</button></form>
            """
    }

    /// The confirmation step of a destructive action: the same form again, marked confirmed.
    static func confirmation(
        _ title: String, question: String, action: String, session: ConsoleSession, button: String,
        hidden: [(String, String)] = [], cancel: String
    ) -> HTTPResponse {
        page(
            title, session: session,
            """
            <h1>\(title)</h1><p>\(question)</p>
            \(form(action, session: session, button: button, buttonID: "confirm", hidden: hidden, confirmed: true))
            <p><a href="\(cancel)">Cancel</a></p>
            """)
    }

    /// A table; `rows` already hold their `<tr>`s. An empty table says so.
    static func table(
        id: String, caption: String, headings: [String], rows: [HTML], empty: String = "Nothing to show."
    ) -> HTML {
        guard !rows.isEmpty else { return "<p class=\"empty\" id=\"\(id)-empty\">\(empty)</p>" }
        let head = headings.map { HTML("<th scope=\"col\">\($0)</th>") }
        return
            "<div class=\"table-wrap\"><table id=\"\(id)\"><caption>\(caption)</caption><thead><tr>\(head)</tr></thead><tbody>\(rows)</tbody></table></div>"
    }

    /// A definition list; the `id`s let a reader (or a test) find one value.
    static func details(id: String, _ items: [(term: String, value: String, id: String?)]) -> HTML {
        let pairs = items.map { item -> HTML in
            let ddID: HTML = item.id.map { " id=\"\($0)\"" } ?? ""
            return "<dt>\(item.term)</dt><dd\(ddID)>\(item.value)</dd>"
        }
        return "<dl id=\"\(id)\">\(pairs)</dl>"
    }
}
