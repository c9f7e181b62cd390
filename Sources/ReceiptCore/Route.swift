public import Foundation

/// How the core authenticates a route before its handler runs.
public enum RouteAuthentication: Sendable, Equatable {
    /// No credential at all (discovery documents, health).
    case none
    /// The HMAC scheme: `X-Client-ID`, `X-Timestamp`, `X-Signature`.
    case signedClient(ReplayPolicy)
    /// `Authorization: Bearer <opaque token>` issued by the token store with this kind. With
    /// `bareAccepted`, `Authorization: <token>` (no scheme) is taken too: some contracts' clients
    /// send the token that way, and refusing them gains nothing (the token is checked the same).
    case bearerToken(kind: String, bareAccepted: Bool = false)
    /// An app calling with no credential: the handler finds the tenant from the request (a bundle
    /// id, a package name) through `DialectCore.client(forAppIdentifier:store:)`.
    case appSDK
    /// `Authorization: Bearer <RECEIPTGATE_ADMIN_TOKEN>`.
    case admin
}

extension RouteAuthentication {
    /// The token an `Authorization` header presents: after `Bearer ` (any case), or the whole
    /// value when `bareAccepted` and it is one word (a value with a space is another scheme, such
    /// as `Basic ...`). Nil when absent, empty or longer than 512 bytes.
    package static func presentedToken(_ header: String?, bareAccepted: Bool = false) -> String? {
        guard let header else { return nil }
        let token: Substring
        if header.count > 7, header.prefix(7).lowercased() == "bearer " {
            token = header.dropFirst(7)
        } else if bareAccepted {
            token = Substring(header)
        } else {
            return nil
        }
        let trimmed = token.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 512 else { return nil }
        // One word: a bare value with inner whitespace is no token (`Basic abc`, `Bearer` alone).
        guard !bareAccepted || !trimmed.contains(where: \.isWhitespace) else { return nil }
        return trimmed
    }
}

/// Whether a signed request may arrive twice. Idempotent routes allow it (an HTTP retry after a
/// timeout is not an attack); a route that changes something each time refuses it.
public enum ReplayPolicy: Sendable, Equatable {
    case allow
    case refuse
}

/// What a rate limit counts by.
public enum RateLimitKey: String, Sendable, Equatable {
    case client
    case callerAddress = "address"
    /// Applied by the handler, which knows the purchase once it has read the body.
    case purchase
    /// Applied by the handler with a key of its own (an account, a mail recipient, a name tried).
    case handler
}

/// A limit per window. `shared` limits are counted in Postgres and hold across every process
/// on the database; the others are counted in this process's memory (no round trip).
public struct RateLimitPolicy: Sendable, Equatable {
    /// Stable name, used in `RECEIPTGATE_RATE_LIMITS` (`native.client=1000/1s`).
    public var name: String
    public var key: RateLimitKey
    public var limit: Int
    public var window: Duration
    public var shared: Bool

    public init(name: String, key: RateLimitKey, limit: Int, window: Duration, shared: Bool) {
        self.name = name
        self.key = key
        self.limit = limit
        self.window = window
        self.shared = shared
    }
}

/// A request as a route handler sees it (no HTTP library types cross into providers).
public struct RouteRequest: Sendable {
    public let method: String
    public let path: String
    /// The request target exactly as sent (path and query, undecoded).
    public let target: String
    /// Header names lower-cased.
    public let headers: [String: String]
    public let body: Data

    package init(method: String, path: String, target: String? = nil, headers: [String: String], body: Data) {
        self.method = method
        self.path = path
        self.target = target ?? path
        self.headers = headers
        self.body = body
    }
}

/// Who the core authenticated, and what a handler needs around the request.
public struct RouteContext: Sendable {
    public let requestID: String
    public let logger: Logger
    /// The caller's address; `X-Forwarded-For` is honoured only from trusted proxies.
    public let callerAddress: String?
    package let pathParameters: [String: String]
    public let query: [String: String]
    /// The client, for signed-client and bearer-token routes.
    public let client: ClientInfo?
    /// The bearer token the request carried, for bearer-token routes.
    public let token: StoredToken?

    package init(
        requestID: String, logger: Logger, callerAddress: String?, pathParameters: [String: String] = [:],
        query: [String: String] = [:], client: ClientInfo? = nil, token: StoredToken? = nil
    ) {
        self.requestID = requestID
        self.logger = logger
        self.callerAddress = callerAddress
        self.pathParameters = pathParameters
        self.query = query
        self.client = client
        self.token = token
    }
}

/// A handler's answer: status, headers (`Retry-After`, `Location`, `Cache-Control`,
/// `WWW-Authenticate`...), a content type and the body.
public struct RouteResponse: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var contentType: String
    public var body: Data
    /// Why the handler's answer could not be given (for the log, never for the client): set on
    /// the 500 that stands in for an answer that could not be encoded.
    public var failure: String?

    public init(
        status: Int, headers: [(name: String, value: String)] = [], contentType: String = "application/json", body: Data
    ) {
        self.status = status
        self.headers = headers
        self.contentType = contentType
        self.body = body
    }

    /// JSON with sorted keys and unescaped slashes, the same bytes every time. An answer that
    /// cannot be encoded (a non-finite number, an Encodable that throws) is never sent as some
    /// other body: it becomes a 500 `INTERNAL_ERROR`, with the reason in `failure` for the log.
    public static func json(
        _ value: some Encodable, status: Int = 200, headers: [(name: String, value: String)] = []
    ) -> RouteResponse {
        do {
            return RouteResponse(status: status, headers: headers, body: try encodedJSON(value))
        } catch {
            var response = RouteResponse(
                status: 500, body: Data(#"{"error":"INTERNAL_ERROR","message":"the answer could not be encoded"}"#.utf8)
            )
            response.failure = "the answer (\(type(of: value))) could not be encoded: \(error)"
            return response
        }
    }

    /// The bytes `json(_:)` answers with, or the encoding error: for JSON that is sent or stored
    /// elsewhere (callbacks, webhooks), where no placeholder may stand in for it.
    public static func encodedJSON(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    /// JSON already encoded (by `JSONWriter` on the hot paths).
    public static func json(
        encoded body: Data, status: Int = 200, headers: [(name: String, value: String)] = []
    ) -> RouteResponse {
        RouteResponse(status: status, headers: headers, body: body)
    }

    public static func html(_ page: String, status: Int = 200) -> RouteResponse {
        // Pages may carry one-time tokens in their URL or form: not cached, not leaked as a referrer, not framed.
        RouteResponse(
            status: status,
            headers: [
                ("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer"),
                ("Content-Security-Policy", "frame-ancestors 'none'"), ("X-Content-Type-Options", "nosniff"),
            ],
            contentType: "text/html; charset=utf-8", body: Data(page.utf8))
    }
}

/// Why the core refused a request before its handler ran. The dialect renders it in its own
/// envelope; the core adds `Retry-After` and `WWW-Authenticate` itself, so no dialect forgets them.
public struct RouteRefusal: Error, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    public let message: String
    /// Seconds until a rate-limited caller may try again.
    public let retryAfter: Int?

    package init(code: ErrorCode, message: String, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "\(code.rawValue): \(message)" }
}

public typealias RouteHandler = @Sendable (RouteRequest, RouteContext) async -> RouteResponse

/// One route of a dialect (or of the native API): its path, how it is authenticated, its rate
/// limits, and the handler.
public struct Route: Sendable {
    public let method: String
    /// With `{name}` path parameters.
    public let path: String
    public let authentication: RouteAuthentication
    public let rateLimits: [RateLimitPolicy]
    public let handler: RouteHandler

    public init(
        _ method: String, _ path: String, authentication: RouteAuthentication, rateLimits: [RateLimitPolicy] = [],
        handler: @escaping RouteHandler
    ) {
        self.method = method
        self.path = path
        self.authentication = authentication
        self.rateLimits = rateLimits
        self.handler = handler
    }
}
