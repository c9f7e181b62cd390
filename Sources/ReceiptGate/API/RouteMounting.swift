import Foundation
import HTTPServer
import ReceiptCore

/// Mounts routes on the router the same way for the native API and every dialect: the core
/// authenticates as the route declares and applies its rate limits before the handler runs, and
/// renders a refusal in the API's own envelope with the headers it needs.
struct RouteMounter: Sendable {
    let directory: any ClientDirectory
    let authentication: ClientAuthentication
    let tokens: any TokenStore
    let replayGuard: any ReplayGuard
    let rateLimiter: RateLimiter
    /// Nil when no admin token is configured: then admin routes are not mounted.
    let adminGate: AdminTokenGate?
    let trustedProxies: [TrustedProxy]
    let logger: Logger

    /// How long a refused-replay signature is remembered: the timestamp window both ways.
    static let replayWindow: Duration = .seconds(Int(ClientAuthentication.window) * 2)

    func mount(_ routes: [Route], render: @escaping @Sendable (RouteRefusal) -> RouteResponse, on router: inout Router)
    {
        for route in routes {
            // Admin routes exist only when an admin token is configured.
            if route.authentication == .admin && adminGate == nil { continue }
            router.add(
                route.method, route.path, headerCheck: Self.headerCheck(route, now: authentication.now, render: render)
            ) {
                [self] request in
                await respond(to: request, route: route, render: render).http
            }
        }
    }

    private func respond(
        to request: HTTPRequest, route: Route, render: @Sendable (RouteRefusal) -> RouteResponse
    ) async -> RouteResponse {
        let (routeRequest, forwarded) = Self.routeRequest(request)
        let caller = TrustedProxy.callerAddress(
            peer: request.remoteAddress, forwardedFor: forwarded, trusted: trustedProxies)
        do {
            for policy in route.rateLimits where policy.key == .callerAddress {
                try await rateLimiter.check(policy, key: caller ?? "unknown")
            }
            let (client, token) = try await authenticate(route, request: routeRequest, caller: caller ?? "unknown")
            for policy in route.rateLimits where policy.key == .client {
                if let client { try await rateLimiter.check(policy, key: client.clientID) }
            }
            let context = RouteContext(
                requestID: request.requestID, logger: logger.with("request.id", request.requestID),
                callerAddress: caller,
                pathParameters: request.pathParameters, query: request.query, client: client, token: token)
            let response = await route.handler(routeRequest, context)
            if let failure = response.failure {
                context.logger.error(
                    "the handler's answer could not be sent",
                    ["route": "\(route.method) \(route.path)", "error": failure])
            }
            return response
        } catch let refusal as RouteRefusal {
            return Self.refusalResponse(refusal, authentication: route.authentication, render: render)
        } catch {
            logger.error("authentication unavailable", ["request.id": request.requestID, "error": "\(error)"])
            if DatabaseOutage.answersRetry(error) {
                return DatabaseOutage.response(
                    render(RouteRefusal(code: .verifierError, message: DatabaseOutage.message)))
            }
            return render(RouteRefusal(code: .verifierError, message: "authentication is unavailable; safe to retry"))
        }
    }

    /// The request as handlers see it, its header names lower-cased: the one conversion of the
    /// headers, which authentication reads too. With every X-Forwarded-For field joined in order:
    /// a proxy that adds its own field after the caller's must not leave the caller's (first) one
    /// as the answer.
    static func routeRequest(_ request: HTTPRequest) -> (RouteRequest, forwardedFor: String?) {
        var headers: [String: String] = Dictionary(minimumCapacity: request.headers.fields.count)
        var forwarded: [String] = []
        for field in request.headers {
            let name = HTTPHeaders.lowercasedName(field.name)
            if headers[name] == nil { headers[name] = field.value }
            if name == "x-forwarded-for" { forwarded.append(field.value) }
        }
        let routeRequest = RouteRequest(
            method: request.method, path: request.path, target: request.target, headers: headers, body: request.body)
        return (routeRequest, forwarded.isEmpty ? nil : forwarded.joined(separator: ", "))
    }

    /// What the headers alone decide, before the body is read: a signed route without its three
    /// headers or with a stale timestamp, a bearer route without a bearer token.
    static func headerCheck(
        _ route: Route, now: @escaping @Sendable () -> Date, render: @escaping @Sendable (RouteRefusal) -> RouteResponse
    ) -> HTTPHeaderCheck? {
        let authentication = route.authentication
        let requireVersion2 = requiresVersion2(route)
        switch authentication {
        case .signedClient:
            return { head in
                guard
                    let problem = ClientAuthentication.headerProblem(
                        header: { head.headers[$0] }, requireVersion2: requireVersion2, now: now())
                else { return nil }
                return refusalResponse(
                    RouteRefusal(code: .unauthorized, message: problem), authentication: authentication, render: render
                ).http
            }
        case .bearerToken(_, let bareAccepted):
            return { head in
                guard
                    RouteAuthentication.presentedToken(head.headers["Authorization"], bareAccepted: bareAccepted) == nil
                else { return nil }
                return refusalResponse(
                    RouteRefusal(code: .unauthorized, message: "a valid bearer access token is required"),
                    authentication: authentication, render: render
                ).http
            }
        case .none, .appSDK, .admin:
            return nil
        }
    }

    /// Routes whose signature must cover method, path and query (version 2): a GET has no body to
    /// sign, and a route with a parameter in its path acts on what the path names (a report signed
    /// for one transaction must not be accepted for another). Version 1 covers the body alone.
    static func requiresVersion2(_ route: Route) -> Bool {
        route.method == "GET" || route.method == "HEAD" || route.path.contains("{")
    }

    static func refusalResponse(
        _ refusal: RouteRefusal, authentication: RouteAuthentication,
        render: @Sendable (RouteRefusal) -> RouteResponse
    ) -> RouteResponse {
        var response = render(refusal)
        if let retryAfter = refusal.retryAfter { response.headers.append(("Retry-After", String(retryAfter))) }
        if refusal.code == .unauthorized, case .bearerToken = authentication {
            response.headers.append(("WWW-Authenticate", #"Bearer error="invalid_token""#))
        }
        return response
    }

    /// The client (and token) the route's authentication establishes. Throws `RouteRefusal`.
    /// The client carries the read that authenticated it, so `prove` and `record` need no other.
    private func authenticate(
        _ route: Route, request: RouteRequest, caller: String
    ) async throws -> (ClientInfo?, StoredToken?) {
        switch route.authentication {
        case .none, .appSDK:
            return (nil, nil)
        case .signedClient(let replay):
            let client: AuthenticatedClient
            do {
                client = try await self.authentication.authenticate(
                    header: { request.headers[$0] }, body: request.body,
                    method: request.method, target: request.target,
                    requireVersion2: Self.requiresVersion2(route))
            } catch let refused as AuthenticationRefused {
                throw RouteRefusal(code: .unauthorized, message: refused.message)
            }
            if replay == .refuse, let signature = request.headers["x-signature"],
                try await !replayGuard.firstSeen(
                    "\(client.client.clientID):\(signature.lowercased())", window: Self.replayWindow)
            {
                throw RouteRefusal(code: .unauthorized, message: "this signed request was already received (replay)")
            }
            return (client.carriedInfo, nil)
        case .bearerToken(let kind, let bareAccepted):
            guard
                let token = RouteAuthentication.presentedToken(
                    request.headers["authorization"], bareAccepted: bareAccepted),
                let stored = try await tokens.resolve(token, kind: kind),
                let client = try await directory.entry(for: stored.clientID)
            else {
                throw RouteRefusal(code: .unauthorized, message: "a valid bearer access token is required")
            }
            return (client.carriedInfo, stored)
        case .admin:
            switch adminGate?.check(Self.bearer(request.headers["authorization"]), callerAddress: caller) {
            case .accepted:
                return (nil, nil)
            case .throttled(let retryAfter):
                throw RouteRefusal(
                    code: .rateLimited,
                    message: "too many wrong admin tokens from this address; retry after \(retryAfter) s",
                    retryAfter: retryAfter)
            case .refused(let firstFromCaller):
                if firstFromCaller {
                    logger.warning("admin API refused: wrong admin token", ["client.address": caller])
                }
                throw RouteRefusal(code: .unauthorized, message: "admin token required")
            case nil:
                throw RouteRefusal(code: .unauthorized, message: "admin token required")
            }
        }
    }

    static func bearer(_ header: String?) -> String? { RouteAuthentication.presentedToken(header) }
}

extension RouteResponse {
    var http: HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Content-Type", contentType)
        for field in self.headers { headers.add(field.name, field.value) }
        return HTTPResponse(status: status, headers: headers, body: body)
    }
}
