public import Foundation
public import ReceiptCore

extension FakeCore {
    /// Calls one of a dialect's routes as the service would: the route's authentication (a signed
    /// client is taken as `signedAs`; a bearer token is resolved in the memory token store), its
    /// rate limits, then the handler; a refusal is rendered by the dialect.
    public func call(
        _ dialect: some DialectProvider, _ method: String, _ path: String, body: Data = Data(),
        headers: [String: String] = [:],
        signedAs client: ClientInfo? = nil, callerAddress: String = "192.0.2.1"
    ) async -> RouteResponse {
        guard let route = dialect.routes(core: self).first(where: { $0.method == method && $0.path == path }) else {
            return RouteResponse(status: 404, body: Data())
        }
        let request = RouteRequest(method: method, path: path, headers: headers, body: body)
        do {
            var authenticated: ClientInfo?
            var token: StoredToken?
            switch route.authentication {
            case .none, .appSDK: break
            case .signedClient, .admin:
                guard let client else { throw RouteRefusal(code: .unauthorized, message: "not signed") }
                authenticated = client
            case .bearerToken(let kind, let bareAccepted):
                let bearer =
                    RouteAuthentication.presentedToken(headers["authorization"], bareAccepted: bareAccepted) ?? ""
                guard let stored = try await memoryTokens.resolve(bearer, kind: kind) else {
                    throw RouteRefusal(code: .unauthorized, message: "bad token")
                }
                token = stored
                authenticated = clients.first { $0.clientID == stored.clientID }
            }
            for policy in route.rateLimits where policy.key != .purchase {
                try await checkRateLimit(
                    policy, key: policy.key == .client ? authenticated?.clientID ?? "" : callerAddress)
            }
            let context = RouteContext(
                requestID: UUID().uuidString, logger: Logger(minimumLevel: .error), callerAddress: callerAddress,
                client: authenticated, token: token)
            return await route.handler(request, context)
        } catch let refusal as RouteRefusal {
            var response = dialect.render(refusal)
            if let retryAfter = refusal.retryAfter { response.headers.append(("Retry-After", String(retryAfter))) }
            return response
        } catch {
            return dialect.render(RouteRefusal(code: .verifierError, message: "\(error)"))
        }
    }
}

extension RouteResponse {
    /// The body as a JSON object, for assertions.
    public var object: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }

    public func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }
}
