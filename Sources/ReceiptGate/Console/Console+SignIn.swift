import Foundation
import HTTPServer

extension Console {
    func registerSignIn(on router: inout Router) {
        router.get("/console/sign-in") { request in await signInPage(request) }
        router.post("/console/sign-in") { request in await signIn(request) }
        action(&router, "/console/sign-out") { request, _, session in
            try await sessions.close(session)
            try await recordAudit(session, "sign-out", "")
            return ConsoleLayout.redirect("/console/sign-in", headers: [
                ("Set-Cookie", sessions.setCookie(ConsoleSessions.sessionCookie, "", maxAge: 0, for: request)),
            ])
        }
    }

    /// The form is bound to a new pre-session cookie each time: a cookie someone planted is never reused.
    private func signInPage(_ request: HTTPRequest, status: Int = 200, error: String? = nil) async -> HTTPResponse {
        if error == nil, (try? await sessions.current(request)) != nil { return ConsoleLayout.redirect("/console") }
        let cookie = ConsoleSessions.newCookieValue()
        return ConsoleLayout.page("Sign in", session: nil, error: error, status: status,
                                  headers: [("Set-Cookie", sessions.setCookie(ConsoleSessions.preSessionCookie, cookie, maxAge: 3600, for: request))], """
            <h1>Sign in to the ReceiptGate console</h1>
            <form method="post" action="/console/sign-in" class="stacked">
            <input type="hidden" name="csrf" value="\(sessions.csrfToken(for: cookie))">
            <div><label for="token">Admin token</label><input id="token" name="token" type="password" autocomplete="current-password" required>
            <p class="hint">The service's <code>RECEIPTGATE_ADMIN_TOKEN</code>.</p></div>
            <div><button type="submit">Sign in</button></div>
            </form>
            """)
    }

    /// The right token always signs in: the throttle holds back only wrong guesses, so nobody can
    /// lock the operator out by guessing from the address a proxy or tunnel shares with them.
    private func signIn(_ request: HTTPRequest) async -> HTTPResponse {
        let address = sessions.callerAddress(request)
        guard let token = ConsoleForm(request: request)?["token"], sessions.isAdminToken(token) else {
            let network = RateLimiter.addressKey(address)
            guard signInThrottle.allows(network) else {
                return ConsoleLayout.page("Sign in", session: nil, error: "Too many wrong tokens from this address; wait a minute.", status: 429,
                                          headers: [("Retry-After", "60")],
                                          "<h1>Sign in to the ReceiptGate console</h1><p><a href=\"/console/sign-in\">Back</a></p>")
            }
            if signInThrottle.failed(network) { logger.warning("console sign-in refused: wrong admin token", ["client.address": address]) }
            return await signInPage(request, status: 401, error: "That is not the admin token.")
        }
        do {
            let (cookie, label) = try await sessions.open()
            try await audit.audit(who: label, action: "sign-in", target: address)
            logger.info("console sign-in", ["console.session": label, "client.address": address])
            return ConsoleLayout.redirect("/console", headers: [
                ("Set-Cookie", sessions.setCookie(ConsoleSessions.sessionCookie, cookie, maxAge: ConsoleSessions.lifetimeSeconds, for: request)),
                ("Set-Cookie", sessions.setCookie(ConsoleSessions.preSessionCookie, "", maxAge: 0, for: request)),
            ])
        } catch {
            logger.error("console sign-in failed", ["error": "\(error)"])
            return await signInPage(request, status: 503, error: "The database could not be reached; try again in a moment.")
        }
    }
}

/// Wrong admin tokens per address (an IPv6 caller per /64): ten a minute, then 429 until the
/// minute is over. In memory and bounded (a flood of addresses resets it rather than growing it);
/// the token itself is long enough that this only keeps the log quiet and guessing slow.
final class SignInThrottle: @unchecked Sendable {
    static let failuresPerMinute = 10
    static let addressesKept = 10_000

    private let lock = NSLock()
    private var minute = 0
    private var failures: [String: Int] = [:]
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date = Date.init) { self.now = now }

    func allows(_ address: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        roll()
        return failures[address, default: 0] < Self.failuresPerMinute
    }

    /// Counts a failure; true for the first of this address this minute (the one worth a log line).
    func failed(_ address: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        roll()
        if failures.count >= Self.addressesKept { failures.removeAll() }
        failures[address, default: 0] += 1
        return failures[address] == 1
    }

    private func roll() {
        let current = Int(now().timeIntervalSince1970 / 60)
        if current != minute { minute = current; failures.removeAll() }
    }
}
