import Foundation
import JSON
import ReceiptCore

/// `POST /auth/v1/token`: the OAuth 2.0 client-credentials grant (RFC 6749 §4.4). The client
/// authenticates with HTTP Basic or with `client_id`/`client_secret` in a form-encoded or JSON
/// body (one way only); the answer is an opaque bearer token the core stores as its SHA-256.
/// Hive Axyl's app servers send only their Client ID and Client Secret, as JSON
/// (`{"clientId", "clientSecret"}`) with no `grant_type`: a JSON body may do that.
/// Errors are RFC 6749 §5.2 objects, not the verify envelope.
struct HiveAxylTokenEndpoint {
    let core: any DialectCore
    let lifetime: Duration

    struct Failure: Error {
        let status: Int
        let error: String
        let description: String
        var headers: [(name: String, value: String)] = []
    }

    func respond(to request: RouteRequest, context: RouteContext) async -> RouteResponse {
        do {
            return try await issue(request, context: context)
        } catch let failure as Failure {
            return .json(
                ["error": failure.error, "error_description": failure.description], status: failure.status,
                headers: failure.headers + Self.noStore)
        } catch {
            context.logger.error("token issue failed", ["error": "\(type(of: error))"])
            return .json(
                [
                    "error": "temporarily_unavailable",
                    "error_description": "the token service is unavailable; safe to retry",
                ],
                status: 503, headers: Self.noStore)
        }
    }

    /// RFC 6749 §5.1: token responses are never cached.
    static let noStore: [(name: String, value: String)] = [("Cache-Control", "no-store"), ("Pragma", "no-cache")]

    private func issue(_ request: RouteRequest, context: RouteContext) async throws -> RouteResponse {
        // Each request checks a secret against the database: bounded per caller address.
        do {
            try await core.checkRateLimit(HiveAxyl.tokenRequests, key: context.callerAddress ?? "unknown")
        } catch let refusal as RouteRefusal {
            throw Failure(
                status: 429, error: "slow_down", description: refusal.message,
                headers: refusal.retryAfter.map { [("Retry-After", String($0))] } ?? [])
        }
        let parameters = try Self.parameters(of: request)
        guard let grant = parameters["grant_type"], !grant.isEmpty else {
            throw Failure(
                status: 400, error: "invalid_request", description: "grant_type is required (client_credentials)")
        }
        guard grant == "client_credentials" else {
            throw Failure(
                status: 400, error: "unsupported_grant_type",
                description: "only grant_type=client_credentials is supported")
        }
        let basic = try Self.basicCredentials(request.headers["authorization"])
        let inBody = parameters["client_id"] != nil || parameters["client_secret"] != nil
        if basic != nil && inBody {
            throw Failure(
                status: 400, error: "invalid_request",
                description: "send the client credentials one way only: HTTP Basic or the body")
        }
        // RFC 6749 §5.2: a client that tried HTTP Basic is told which scheme to use.
        let challenge: [(name: String, value: String)] =
            basic != nil ? [("WWW-Authenticate", #"Basic realm="receiptgate""#)] : []
        guard
            let (id, secret) = basic
                ?? parameters["client_id"].flatMap({ id in parameters["client_secret"].map { (id, $0) } }),
            !id.isEmpty, !secret.isEmpty,
            let client = try await core.authenticateClient(id: id, secret: secret)
        else {
            throw Failure(
                status: 401, error: "invalid_client", description: "client authentication failed", headers: challenge)
        }
        let issued: IssuedToken
        do {
            issued = try await core.tokens.issue(
                TokenRequest(
                    kind: HiveAxyl.tokenKind, clientID: client.clientID, lifetime: lifetime,
                    clientVersion: client.version))
        } catch is ClientChangedSinceAuthentication {
            // Rotated or disabled since the secret was checked: the secret is no longer good.
            throw Failure(
                status: 401, error: "invalid_client", description: "client authentication failed", headers: challenge)
        }
        context.logger.info("access token issued", ["client.id": client.clientID])
        return .json(
            TokenResponse(accessToken: issued.token, expiresIn: Int(lifetime.components.seconds)), headers: Self.noStore
        )
    }

    struct TokenResponse: Encodable {
        let accessToken: String
        let tokenType = "Bearer"
        let expiresIn: Int
        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token", tokenType = "token_type", expiresIn = "expires_in"
        }
    }

    /// The body's parameters: JSON when it says so (or looks like an object), else form-encoded.
    static func parameters(of request: RouteRequest) throws -> [String: String] {
        let type = request.headers["content-type"]?.lowercased() ?? ""
        let looksLikeJSON = request.body.first.map { $0 == UInt8(ascii: "{") } ?? false
        if type.hasPrefix("application/json") || (!type.hasPrefix("application/x-www-form-urlencoded") && looksLikeJSON)
        {
            return try json(request.body)
        }
        return try form(String(decoding: request.body, as: UTF8.self))
    }

    /// A JSON body's parameters under their RFC 6749 names. The contract's camelCase names are the
    /// same parameters; a JSON body without `grant_type` asks for client credentials, the only
    /// grant there is (a form body keeps RFC 6749's rule: `grant_type` required).
    static func json(_ body: Data) throws -> [String: String] {
        guard let object = JSONValue(parsing: body)?.object else {
            throw Failure(status: 400, error: "invalid_request", description: "the body is not a JSON object")
        }
        var parameters: [String: String] = [:]
        for (key, value) in object {
            guard let name = jsonNames[key] else { continue }
            guard let text = value.string else {
                throw Failure(status: 400, error: "invalid_request", description: "\(key) must be a string")
            }
            guard parameters[name] == nil else {
                throw Failure(
                    status: 400, error: "invalid_request",
                    description: "\(name) is sent more than once (snake_case and camelCase)")
            }
            parameters[name] = text
        }
        if parameters["grant_type"] == nil { parameters["grant_type"] = "client_credentials" }
        return parameters
    }

    /// JSON field → parameter: RFC 6749's names and Hive Axyl's camelCase ones.
    static let jsonNames: [String: String] = [
        "grant_type": "grant_type", "client_id": "client_id", "client_secret": "client_secret", "scope": "scope",
        "grantType": "grant_type", "clientId": "client_id", "clientSecret": "client_secret",
    ]

    /// `application/x-www-form-urlencoded`. RFC 6749 §3.2: a parameter sent twice is an error.
    static func form(_ text: String) throws -> [String: String] {
        do {
            return try FormEncoding.parameters(text)
        } catch .undecodable {
            throw Failure(
                status: 400, error: "invalid_request", description: "the form body is not valid percent-encoding")
        } catch .repeated(let name) {
            throw Failure(status: 400, error: "invalid_request", description: "\(name) is sent more than once")
        }
    }

    /// `Authorization: Basic base64(urlencode(id):urlencode(secret))` (RFC 6749 §2.3.1); nil when
    /// the header is absent or another scheme. A malformed Basic header is `invalid_client`.
    static func basicCredentials(_ header: String?) throws -> (String, String)? {
        guard let header, header.count > 6, header.prefix(6).lowercased() == "basic " else { return nil }
        let encoded = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard encoded.utf8.count <= 1024, let data = Data(base64Encoded: encoded),
            let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":"),
            let id = FormEncoding.decode(text[..<colon]),
            let secret = FormEncoding.decode(text[text.index(after: colon)...])
        else {
            throw Failure(
                status: 401, error: "invalid_client", description: "the Basic authorization header is malformed",
                headers: [("WWW-Authenticate", #"Basic realm="receiptgate""#)])
        }
        return (id, secret)
    }
}
