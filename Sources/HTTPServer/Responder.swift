import Foundation

/// The built router: routes a request, runs middleware and the handler, and turns anything
/// thrown into a JSON error response. It never throws and never crashes on input.
package struct Responder: Sendable {
    private let routes: [Router.Route]
    /// The routes by pattern, then method.
    private let table: [String: [String: Router.Route]]
    /// The routes by number of path segments, in the order they were added.
    private let routesBySegmentCount: [Int: [Router.Route]]
    private let chain: HTTPHandler
    package let handlerTimeout: Duration
    /// Where requests are handled; nil is Swift's global pool.
    package let handlerExecutor: (any TaskExecutor)?

    init(
        routes: [Router.Route], middleware: [any HTTPMiddleware], handlerTimeout: Duration,
        handlerExecutor: (any TaskExecutor)?
    ) {
        self.routes = routes
        self.handlerTimeout = handlerTimeout
        self.handlerExecutor = handlerExecutor
        var byPattern: [String: [String: Router.Route]] = [:]
        for route in routes { byPattern[route.pattern, default: [:]][route.method] = route }
        let table = byPattern
        routesBySegmentCount = Dictionary(grouping: routes, by: \.segments.count)
        // The innermost step runs the matched handler (or answers 404/405) and converts errors,
        // so every middleware sees the final status.
        let dispatch: HTTPHandler = { request in
            if request.malformedPath { return Self.malformedPath }
            guard let route = Self.serving(request.method, pattern: request.route, in: table) else {
                return Self.routingFailure(
                    method: request.method, path: request.path, pattern: request.route, routes: routes)
            }
            // Over a socket, a request with a body had its headers checked before the body was read.
            if !request.headerChecked, let check = route.headerCheck, let refusal = check(request.head) {
                return refusal
            }
            do {
                return try await withDeadline(handlerTimeout, on: handlerExecutor) { try await route.handler(request) }
            } catch {
                return Self.errorResponse(for: error)
            }
        }
        self.table = table
        chain = middleware.reversed().reduce(dispatch) { next, layer in
            { request in try await layer.handle(request, next: next) }
        }
    }

    /// Every (method, pattern) this responder serves, for documentation checks.
    package var routeTable: [(method: String, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    package func respond(to incoming: HTTPRequest) async -> HTTPResponse {
        var request = incoming
        request.requestID = Self.requestID(from: request.headers["X-Request-Id"])
        var response: HTTPResponse
        if !HTTPMethod.isToken(request.method) {
            // Not HTTP: refused before routing, middleware, logs or metrics see it.
            response = Self.badMethod
        } else {
            if !request.routed {
                switch match(method: request.method, target: request.target) {
                case .matched(let route, let parameters):
                    // A path that exists under another method keeps its pattern as the route: the
                    // dispatch step finds no handler for this method and answers 405.
                    request.route = route.pattern
                    request.pathParameters = parameters
                case .unmatched:
                    break
                case .malformed:
                    // Answered by the dispatch step, so the middleware logs and counts it.
                    request.malformedPath = true
                }
            }
            do {
                response = try await chain(request)
            } catch {
                response = Self.errorResponse(for: error)
            }
        }
        if request.method == "HEAD" {
            // The headers GET would send, Content-Length included (unknown for a streamed body,
            // which is never started); libmicrohttpd sends no body.
            if response.stream == nil { response.headers.replace("Content-Length", String(response.body.count)) }
            response.body = Data()
            response.stream = nil
        }
        response.headers.replace("X-Request-Id", request.requestID)
        return response
    }

    /// The answer a request gets from its head alone, before any of its body is read: 400 for a
    /// method that is not a token; then, for a request announcing a body, 404 or 405 if no route
    /// serves it, or its route's `headerCheck` refusal. nil means "read the body and respond".
    /// (A request without a body goes through `respond(to:)` whole, so the middleware logs and
    /// counts its 404 or refusal; there is no body to spare.) A request with a body that may go on
    /// leaves here routed and header-checked, so `respond(to:)` does neither again.
    func earlyResponse(to request: inout HTTPRequest) -> HTTPResponse? {
        guard HTTPMethod.isToken(request.method) else { return Self.badMethod }
        let head = request.head
        guard head.announcesBody else { return nil }
        let routing = match(method: head.method, target: request.target)
        if case .malformed = routing { return Self.malformedPath }
        let matched: (Router.Route, [String: String])? =
            if case .matched(let route, let parameters) = routing { (route, parameters) } else { nil }
        let pattern = matched?.0.pattern ?? "unmatched"
        guard let route = Self.serving(head.method, pattern: pattern, in: table) else {
            return Self.routingFailure(method: head.method, path: head.path, pattern: pattern, routes: routes)
        }
        if let refusal = route.headerCheck?(head) { return refusal }
        request.route = pattern
        request.pathParameters = matched?.1 ?? [:]
        request.routed = true
        request.headerChecked = true
        return nil
    }

    private enum Routing {
        case matched(Router.Route, [String: String])
        case unmatched
        /// The path's percent-encoding is broken (see `Router.segments(ofTarget:)`).
        case malformed
    }

    /// The route for the target's path, preferring one that serves `method` (HEAD is served by
    /// GET). Matched on the encoded segments, each decoded after the split (`Router.segments`).
    private func match(method: String, target: String) -> Routing {
        guard let segments = Router.segments(ofTarget: target) else { return .malformed }
        var firstGET: Router.Route?, first: Router.Route?
        for route in routesBySegmentCount[segments.count] ?? [] where Self.matches(route: route, segments: segments) {
            if route.method == method { return .matched(route, Self.parameters(route: route, segments: segments)) }
            if first == nil { first = route }
            if firstGET == nil && route.method == "GET" { firstGET = route }
        }
        guard let chosen = (method == "HEAD" ? firstGET : nil) ?? first else { return .unmatched }
        return .matched(chosen, Self.parameters(route: chosen, segments: segments))
    }

    private static func serving(
        _ method: String, pattern: String, in table: [String: [String: Router.Route]]
    ) -> Router.Route? {
        guard let methods = table[pattern] else { return nil }
        return methods[method] ?? (method == "HEAD" ? methods["GET"] : nil)
    }

    private static func routingFailure(
        method: String, path: String, pattern: String, routes: [Router.Route]
    ) -> HTTPResponse {
        if pattern == "unmatched" {
            return HTTPError(status: 404, code: "NOT_FOUND", message: "no route for \(method) \(path)").response
        }
        var allowed = Set(routes.filter { $0.pattern == pattern }.map(\.method))
        if allowed.contains("GET") { allowed.insert("HEAD") }
        return HTTPError(
            status: 405, code: "METHOD_NOT_ALLOWED", message: "\(method) is not allowed here",
            headers: ["Allow": allowed.sorted().joined(separator: ", ")]
        ).response
    }

    static var malformedPath: HTTPResponse {
        HTTPError(
            status: 400, code: "INVALID_FIELD",
            message: "the request path is not well percent-encoded (each % must start two hex digits of UTF-8, not %00)"
        ).response
    }

    static var badMethod: HTTPResponse {
        HTTPError(status: 400, code: "BAD_REQUEST", message: "the request method is not a valid HTTP method").response
    }

    static func errorResponse(for error: any Error) -> HTTPResponse {
        if let httpError = error as? HTTPError { return httpError.response }
        if error is DeadlineExceeded {
            return HTTPError(
                status: 503, code: "DEADLINE_EXCEEDED", message: "the request took too long; it is safe to retry"
            ).response
        }
        // Internals stay internal: the log has the detail (via middleware), the client a request id.
        return HTTPError(status: 500, code: "INTERNAL_ERROR", message: "internal error").response
    }

    private static func matches(route: Router.Route, segments: [Substring]) -> Bool {
        guard route.segments.count == segments.count else { return false }
        for (expected, actual) in zip(route.segments, segments) {
            if case .literal(let literal) = expected, literal != actual { return false }
        }
        return true
    }

    /// The path parameters of a route that `matches`.
    private static func parameters(route: Router.Route, segments: [Substring]) -> [String: String] {
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(route.segments, segments) {
            if case .parameter(let name) = expected { parameters[name] = String(actual) }
        }
        return parameters
    }

    /// Accepts a caller's request id only if it is short printable ASCII (it ends up in logs).
    static func requestID(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 128,
            header.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        {
            return header
        }
        return freshRequestID()
    }

    /// A random (version 4) UUID, written straight as lower-case hex (`UUID().uuidString.lowercased()`
    /// opened /dev/urandom and went through Unicode case mapping for each request).
    static func freshRequestID() -> String {
        var bytes = RequestIDRandomness.shared.next16()
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0f | 0x40  // version 4
            raw[8] = raw[8] & 0x3f | 0x80  // RFC 4122 variant
            return String(unsafeUninitializedCapacity: 36) { text in
                let digits = ("0123456789abcdef" as StaticString).utf8Start
                var position = 0
                for (index, byte) in raw.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = digits[Int(byte >> 4)]
                    text[position + 1] = digits[Int(byte & 0x0f)]
                    position += 2
                }
                return position
            }
        }
    }
}
