import Foundation
import HTTPServer
import ReceiptCore

/// The operator console: HTML pages under `/console` on the admin listener (or the public one
/// when there is none), served only when `RECEIPTGATE_ADMIN_TOKEN` is set. Everything it shows
/// comes from the same repositories the admin API and the CLI use; every action it takes is
/// written to the audit log with the session that took it.
struct Console: Sendable {
    let sessions: ConsoleSessions
    /// The admin token's check, shared with the admin API.
    let adminGate: AdminTokenGate
    let audit: ConsoleRepository
    let queries: OperatorQueries
    let clients: ClientRepository
    let outbox: OutboxRepository
    let database: Database
    let stores: [StoreRegistration]
    /// How client settings are read and checked: each plugin's as the registry declares them.
    let input: ClientSettingsInput
    let logger: Logger
    /// The service's clock: whether a grant shown has ended yet.
    let now: @Sendable () -> Date
    /// Asks a store to refund an order, for a store that takes such requests.
    var orderRefunds: OrderRefunds?
    /// Asks a store to revoke, cancel or defer a subscription, for a store that takes such requests.
    var subscriptionChanges: SubscriptionChanges?

    typealias Page = @Sendable (HTTPRequest, ConsoleSession) async throws -> HTTPResponse
    typealias Action = @Sendable (HTTPRequest, ConsoleForm, ConsoleSession) async throws -> HTTPResponse

    func register(on router: inout Router) {
        router.use(ConsoleCSRFGate(sessions: sessions))
        router.get("/console/assets/{name}") { request in
            ConsoleAssets.response(request.pathParameters["name"] ?? "") ?? ConsoleLayout.notFound
        }
        registerSignIn(on: &router)
        page(&router, "/console") { request, session in try await overview(request, session) }
        registerAnalytics(on: &router)
        registerClients(on: &router)
        page(&router, "/console/purchases") { request, session in try await purchases(request, session) }
        page(&router, "/console/purchases/{store}/{transaction_id}") { request, session in
            try await purchase(request, session)
        }
        action(&router, "/console/purchases/{store}/{transaction_id}/refund") { request, form, session in
            try await storeRefund(request, form, session)
        }
        action(&router, "/console/purchases/{store}/{transaction_id}/subscription/{action}") { request, form, session in
            try await subscriptionChange(request, form, session)
        }
        page(&router, "/console/players/{player_id}") { request, session in try await player(request, session) }
        page(&router, "/console/deliveries") { request, session in try await deliveries(request, session) }
        action(&router, "/console/deliveries/redeliver-all") { request, form, session in
            try await redeliverAll(request, form, session)
        }
        action(&router, "/console/deliveries/{event_id}/redeliver") { request, form, session in
            try await redeliver(request, form, session)
        }
        page(&router, "/console/accounts") { request, session in try await accounts(request, session) }
        action(&router, "/console/accounts/{account_id}/revoke-sessions") { request, form, session in
            try await revokeSessions(request, form, session)
        }
        page(&router, "/console/notifications") { request, session in try await notifications(request, session) }
        page(&router, "/console/consent") { request, session in try await consentRevocations(request, session) }
        page(&router, "/console/refunds") { request, session in try await refunds(request, session) }
        page(&router, "/console/external-purchases") { request, session in
            try await externalPurchases(request, session)
        }
        page(&router, "/console/audit") { request, session in try await auditLog(request, session) }
        registerFallbacks(on: &router)
    }

    /// A page for a signed-in operator; anyone else is sent to sign in.
    func page(_ router: inout Router, _ path: String, _ body: @escaping Page) {
        router.get(path) { request in
            await signedIn(request) { session in try await body(request, session) }
        }
    }

    /// A form's target. The CSRF gate has already checked the token before this runs.
    func action(_ router: inout Router, _ path: String, _ body: @escaping Action) {
        router.post(path) { request in
            await signedIn(request) { session in
                guard let form = ConsoleForm(request: request) else {
                    return ConsoleLayout.page(
                        "Not a form", session: session, error: "The request was not a form this console sent.",
                        status: 400,
                        "<h1>Not a form</h1>")
                }
                return try await body(request, form, session)
            }
        }
    }

    private func signedIn(
        _ request: HTTPRequest, _ body: (ConsoleSession) async throws -> HTTPResponse
    ) async -> HTTPResponse {
        do {
            guard let session = try await sessions.current(request) else {
                return ConsoleLayout.redirect("/console/sign-in")
            }
            return try await body(session)
        } catch {
            logger.error("console page failed", ["path": request.route, "error": "\(error)"])
            return ConsoleLayout.page(
                "Unavailable", session: nil, error: "The database could not be reached; try again in a moment.",
                status: 503,
                "<h1>Unavailable</h1><p><a href=\"/console\">Back to the console</a></p>")
        }
    }

    /// Paths under /console that no page serves: a POST still meets the CSRF gate first (the
    /// router refuses an unknown path before any middleware otherwise), then both answer 404.
    private func registerFallbacks(on router: inout Router) {
        let notFound: HTTPHandler = { _ in ConsoleLayout.notFound }
        router.post("/console", notFound)
        for depth in 1...6 {
            let pattern = "/console" + (1...depth).map { "/{p\($0)}" }.joined()
            router.get(pattern, notFound)
            router.post(pattern, notFound)
        }
    }

    func recordAudit(_ session: ConsoleSession, _ action: String, _ target: String) async throws {
        try await audit.audit(who: session.label, action: action, target: target)
        logger.info("console action", ["console.session": session.label, "action": action, "target": target])
    }
}

/// Every POST under /console must carry the CSRF token of the cookie it came with; without it the
/// answer is 403 before routing, authentication or anything else looks at the request.
struct ConsoleCSRFGate: HTTPMiddleware {
    let sessions: ConsoleSessions

    func handle(_ request: HTTPRequest, next: HTTPHandler) async throws -> HTTPResponse {
        guard request.normalizedMethod == "POST", Self.isUnderConsole(request.path) else {
            return try await next(request)
        }
        // The sign-in form is told apart as the router tells it (an encoded slash splits nothing);
        // a path the router refuses as malformed is held to the stricter check.
        let segments = Router.segments(ofTarget: request.target) ?? []
        let signingIn = segments.count == 2 && segments[1] == "sign-in"
        guard sessions.isValidCSRF(ConsoleForm(request: request)?["csrf"], request: request, preSession: signingIn)
        else {
            return ConsoleLayout.page(
                "Refused", session: nil, status: 403,
                """
                <h1>Refused</h1><p class="error" role="alert">The form did not come from a console page of the signed-in browser (its CSRF token is missing or wrong).</p>
                <p><a href="/console">Back to the console</a></p>
                """)
        }
        return try await next(request)
    }

    /// Whether the decoded path's first segment is `console` (empty segments are skipped, so
    /// `//console/…` is under it too): true for every path the router reads as under `/console`,
    /// and for a few it does not (`/console%2Fx`, which no route serves). Without building the
    /// segments: every request of the API passes here when the console shares its listener.
    static func isUnderConsole(_ path: String) -> Bool {
        let scalars = path.unicodeScalars.drop { $0 == "/" }
        guard scalars.starts(with: "console".unicodeScalars) else { return false }
        let rest = scalars.dropFirst(7)
        return rest.first == nil || rest.first == "/"
    }
}
