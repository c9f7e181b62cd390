import Foundation

package typealias HTTPHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Looks at a request before its body is read; a response refuses the request with it (the body is
/// then never read), nil lets it through to the handler. Must be quick and must not block: over a
/// socket it runs on a libmicrohttpd thread.
package typealias HTTPHeaderCheck = @Sendable (HTTPRequestHead) -> HTTPResponse?

/// Wraps every request that reaches the responder, matched or not (request id, logging,
/// metrics, authentication...). Middleware added first runs outermost.
package protocol HTTPMiddleware: Sendable {
    func handle(_ request: HTTPRequest, next: HTTPHandler) async throws -> HTTPResponse
}

/// Collects routes and middleware, then `build()`s an immutable responder.
///
///     var router = Router()
///     router.get("/v1/transactions/{store}/{transaction_id}") { request in ... }
package struct Router {
    struct Route {
        let method: String
        let pattern: String
        let segments: [Segment]
        let headerCheck: HTTPHeaderCheck?
        let handler: HTTPHandler
    }

    enum Segment: Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []
    private var middleware: [any HTTPMiddleware] = []

    package init() {}

    /// Serves `method` on `pattern`. A `GET` route also answers `HEAD` (same status and headers, no
    /// body) unless a `HEAD` route of its own exists. `headerCheck` runs once the headers are in,
    /// before any of the body is read; see `HTTPHeaderCheck`.
    package mutating func add(
        _ method: String, _ pattern: String, headerCheck: HTTPHeaderCheck? = nil,
        _ handler: @escaping HTTPHandler
    ) {
        let method = method.uppercased()
        precondition(HTTPMethod.isToken(method), "\(method) is not an HTTP method")
        let segments = Self.split(pattern).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        precondition(
            !routes.contains { $0.method == method && $0.segments == segments }, "duplicate route \(method) \(pattern)")
        routes.append(
            Route(method: method, pattern: pattern, segments: segments, headerCheck: headerCheck, handler: handler))
    }

    package mutating func get(_ pattern: String, headerCheck: HTTPHeaderCheck? = nil, _ handler: @escaping HTTPHandler)
    {
        add("GET", pattern, headerCheck: headerCheck, handler)
    }
    package mutating func post(_ pattern: String, headerCheck: HTTPHeaderCheck? = nil, _ handler: @escaping HTTPHandler)
    {
        add("POST", pattern, headerCheck: headerCheck, handler)
    }
    package mutating func put(_ pattern: String, headerCheck: HTTPHeaderCheck? = nil, _ handler: @escaping HTTPHandler)
    {
        add("PUT", pattern, headerCheck: headerCheck, handler)
    }
    package mutating func delete(
        _ pattern: String, headerCheck: HTTPHeaderCheck? = nil, _ handler: @escaping HTTPHandler
    ) {
        add("DELETE", pattern, headerCheck: headerCheck, handler)
    }

    package mutating func use(_ middleware: any HTTPMiddleware) { self.middleware.append(middleware) }

    /// `handlerExecutor` runs the requests somewhere other than Swift's global pool: a test's fake
    /// store then answers like a remote one, whatever the test process's own tasks are doing.
    package func build(handlerTimeout: Duration = .seconds(30), handlerExecutor: (any TaskExecutor)? = nil) -> Responder
    {
        Responder(
            routes: routes, middleware: middleware, handlerTimeout: handlerTimeout, handlerExecutor: handlerExecutor)
    }

    /// By Unicode scalar, not by Character: a "/" followed by a combining mark or an emoji
    /// modifier is one Character, and splitting by Character would not see that slash.
    package static func split(_ path: String) -> [Substring] {
        path.unicodeScalars.split(separator: "/", omittingEmptySubsequences: true).map { Substring($0) }
    }

    /// The segments routing reads: the request target's path (up to `?`), still encoded, split at
    /// its slashes, then each segment percent-decoded on its own, so an encoded slash (`%2F`) in a
    /// player id stays inside that id instead of splitting the path. Nil when an escape is not `%`
    /// and two hex digits, encodes NUL, or the decoded bytes are not UTF-8.
    package static func segments(ofTarget target: String) -> [Substring]? {
        let path =
            target.utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }.map { String(target[..<$0]) }
            ?? target
        var segments: [Substring] = []
        for raw in split(path) {
            guard let segment = percentDecoded(raw) else { return nil }
            segments.append(segment)
        }
        return segments
    }

    /// `%XX` escapes decoded (nothing else: `+` is a plus in a path).
    package static func percentDecoded(_ segment: Substring) -> Substring? {
        guard segment.utf8.contains(UInt8(ascii: "%")) else { return segment }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segment.utf8.count)
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue),
                high | low != 0
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self).map { Substring($0) }
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
