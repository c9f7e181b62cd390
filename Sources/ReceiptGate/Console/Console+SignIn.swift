import Foundation
import HTTPServer

extension Console {
    func registerSignIn(on router: inout Router) {
        router.get("/console/sign-in") { request in await signInPage(request) }
        router.post("/console/sign-in") { request in await signIn(request) }
        action(&router, "/console/sign-out") { request, _, session in
            try await sessions.close(session)
            try await recordAudit(session, "sign-out", "")
            return ConsoleLayout.redirect(
                "/console/sign-in",
                headers: [
                    ("Set-Cookie", sessions.setCookie(ConsoleSessions.sessionCookie, "", maxAge: 0, for: request))
                ])
        }
    }

    /// The form is bound to a new pre-session cookie each time: a cookie someone planted is never reused.
    private func signInPage(_ request: HTTPRequest, status: Int = 200, error: String? = nil) async -> HTTPResponse {
        if error == nil, (try? await sessions.current(request)) != nil { return ConsoleLayout.redirect("/console") }
        let cookie = ConsoleSessions.newCookieValue()
        return ConsoleLayout.page(
            "Sign in", session: nil, error: error, status: status,
            headers: [
                ("Set-Cookie", sessions.setCookie(ConsoleSessions.preSessionCookie, cookie, maxAge: 3600, for: request))
            ],
            """
            <h1>Sign in to the ReceiptGate console</h1>
            <form method="post" action="/console/sign-in" class="stacked">
            <input type="hidden" name="csrf" value="\(sessions.csrfToken(for: cookie))">
            <div><label for="token">Admin token</label><input id="token" name="token" type="password" autocomplete="current-password" required>
            <p class="hint">The service's <code>RECEIPTGATE_ADMIN_TOKEN</code>.</p></div>
            <div><button type="submit">Sign in</button></div>
            </form>
            """)
    }

    /// The token is checked by the gate the admin API shares (its rule: the right token always
    /// signs in; wrong ones from a caller are held back after ten).
    private func signIn(_ request: HTTPRequest) async -> HTTPResponse {
        let address = sessions.callerAddress(request)
        switch adminGate.check(ConsoleForm(request: request)?["token"], callerAddress: address) {
        case .accepted:
            break
        case .throttled(let retryAfter):
            return ConsoleLayout.page(
                "Sign in", session: nil, error: "Too many wrong tokens from this address; wait a minute.", status: 429,
                headers: [("Retry-After", String(retryAfter))],
                "<h1>Sign in to the ReceiptGate console</h1><p><a href=\"/console/sign-in\">Back</a></p>")
        case .refused(let firstFromCaller):
            if firstFromCaller {
                logger.warning("console sign-in refused: wrong admin token", ["client.address": address])
            }
            return await signInPage(request, status: 401, error: "That is not the admin token.")
        }
        do {
            let (cookie, label) = try await sessions.open()
            try await audit.audit(who: label, action: "sign-in", target: address)
            logger.info("console sign-in", ["console.session": label, "client.address": address])
            return ConsoleLayout.redirect(
                "/console",
                headers: [
                    (
                        "Set-Cookie",
                        sessions.setCookie(
                            ConsoleSessions.sessionCookie, cookie, maxAge: ConsoleSessions.lifetimeSeconds, for: request
                        )
                    ),
                    ("Set-Cookie", sessions.setCookie(ConsoleSessions.preSessionCookie, "", maxAge: 0, for: request)),
                ])
        } catch {
            logger.error("console sign-in failed", ["error": "\(error)"])
            return await signInPage(
                request, status: 503, error: "The database could not be reached; try again in a moment.")
        }
    }
}
