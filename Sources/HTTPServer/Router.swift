public import Foundation

public typealias HTTPHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// Wraps every request that reaches the responder, matched or not (request id, logging,
/// metrics, authentication...). Middleware added first runs outermost.
public protocol HTTPMiddleware: Sendable {
    func handle(_ request: HTTPRequest, next: HTTPHandler) async throws -> HTTPResponse
}

/// Collects routes and middleware, then `build()`s an immutable responder.
///
///     var router = Router()
///     router.get("/v1/transactions/{store}/{transaction_id}") { request in ... }
public struct Router {
    struct Route {
        let method: String
        let pattern: String
        let segments: [Segment]
        let handler: HTTPHandler
    }

    enum Segment: Equatable {
        case literal(String)
        case parameter(String)
    }

    private var routes: [Route] = []
    private var middleware: [any HTTPMiddleware] = []

    public init() {}

    public mutating func add(_ method: String, _ pattern: String, _ handler: @escaping HTTPHandler) {
        let segments = Self.split(pattern).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        precondition(!routes.contains { $0.method == method && $0.segments == segments }, "duplicate route \(method) \(pattern)")
        routes.append(Route(method: method.uppercased(), pattern: pattern, segments: segments, handler: handler))
    }

    public mutating func get(_ pattern: String, _ handler: @escaping HTTPHandler) { add("GET", pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping HTTPHandler) { add("POST", pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping HTTPHandler) { add("PUT", pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping HTTPHandler) { add("DELETE", pattern, handler) }

    public mutating func use(_ middleware: any HTTPMiddleware) { self.middleware.append(middleware) }

    public func build(handlerTimeout: Duration = .seconds(30)) -> Responder {
        Responder(routes: routes, middleware: middleware, handlerTimeout: handlerTimeout)
    }

    static func split(_ path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: true)
    }
}

/// The built router: routes a request, runs middleware and the handler, and turns anything
/// thrown into a JSON error response. It never throws and never crashes on input.
public struct Responder: Sendable {
    private let routes: [Router.Route]
    private let chain: HTTPHandler
    public let handlerTimeout: Duration

    init(routes: [Router.Route], middleware: [any HTTPMiddleware], handlerTimeout: Duration) {
        self.routes = routes
        self.handlerTimeout = handlerTimeout
        let handlers = Dictionary(uniqueKeysWithValues: routes.map { ("\($0.method) \($0.pattern)", $0.handler) })
        // The innermost step runs the matched handler (or answers 404/405) and converts errors,
        // so every middleware sees the final status.
        let dispatch: HTTPHandler = { request in
            if let handler = handlers["\(request.method) \(request.route)"] {
                do {
                    return try await withDeadline(handlerTimeout) { try await handler(request) }
                } catch {
                    return Self.errorResponse(for: error)
                }
            }
            if request.route == "unmatched" {
                return HTTPError(status: 404, code: "NOT_FOUND", message: "no route for \(request.method) \(request.path)").response
            }
            let allowed = Set(routes.filter { $0.pattern == request.route }.map(\.method)).sorted()
            return HTTPError(status: 405, code: "METHOD_NOT_ALLOWED", message: "\(request.method) is not allowed here",
                             headers: ["Allow": allowed.joined(separator: ", ")]).response
        }
        chain = middleware.reversed().reduce(dispatch) { next, layer in
            { request in try await layer.handle(request, next: next) }
        }
    }

    /// Every (method, pattern) this responder serves, for documentation checks.
    public var routeTable: [(method: String, pattern: String)] { routes.map { ($0.method, $0.pattern) } }

    public func respond(to incoming: HTTPRequest) async -> HTTPResponse {
        var request = incoming
        request.requestID = Self.requestID(from: request.headers["X-Request-Id"])
        let segments = Router.split(request.path)
        let candidates = routes.compactMap { route in Self.parameters(route: route, segments: segments).map { (route, $0) } }
        if let (route, parameters) = candidates.first(where: { $0.0.method == request.method }) ?? candidates.first {
            // A path that exists under another method keeps its pattern as the route: the
            // dispatch step finds no handler for this method and answers 405.
            request.route = route.pattern
            request.pathParameters = parameters
        }
        var response: HTTPResponse
        do {
            response = try await chain(request)
        } catch {
            response = Self.errorResponse(for: error)
        }
        response.headers.replace("X-Request-Id", request.requestID)
        return response
    }

    static func errorResponse(for error: any Error) -> HTTPResponse {
        if let httpError = error as? HTTPError { return httpError.response }
        if error is DeadlineExceeded {
            return HTTPError(status: 503, code: "DEADLINE_EXCEEDED", message: "the request took too long; it is safe to retry").response
        }
        // Internals stay internal: the log has the detail (via middleware), the client a request id.
        return HTTPError(status: 500, code: "INTERNAL_ERROR", message: "internal error").response
    }

    private static func parameters(route: Router.Route, segments: [Substring]) -> [String: String]? {
        guard route.segments.count == segments.count else { return nil }
        var parameters: [String: String] = [:]
        for (expected, actual) in zip(route.segments, segments) {
            switch expected {
            case .literal(let literal): guard literal == actual else { return nil }
            case .parameter(let name): parameters[name] = String(actual)
            }
        }
        return parameters
    }

    /// Accepts a caller's request id only if it is short printable ASCII (it ends up in logs).
    static func requestID(from header: String?) -> String {
        if let header, !header.isEmpty, header.utf8.count <= 128,
           header.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) {
            return header
        }
        return UUID().uuidString.lowercased()
    }
}

public struct DeadlineExceeded: Error {}

/// Runs `body`, or gives up with `DeadlineExceeded` once `timeout` passes. The body is cancelled
/// but not awaited: work that ignores cancellation (a blocking database call) cannot hold the
/// response hostage.
public func withDeadline<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    let gate = FirstResult<T>()
    return try await withCheckedThrowingContinuation { continuation in
        gate.install(continuation)
        let work = Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            gate.finish(result)
        }
        let watch = DeadlineWatcher.shared.add(deadline: .now + timeout) {
            if gate.finish(.failure(DeadlineExceeded())) { work.cancel() }
        }
        gate.onFinish { DeadlineWatcher.shared.remove(watch) }
    }
}

/// One thread that fires expired deadlines. A `Task.sleep` per request would do the same, but a
/// cancelled sleep keeps its timer allocated until the original deadline: at tens of thousands of
/// requests a second with 30-second deadlines, that is hundreds of megabytes held for nothing.
final class DeadlineWatcher: @unchecked Sendable {
    static let shared = DeadlineWatcher()

    private let condition = NSCondition()  // guards the fields below
    private var entries: [Int: (deadline: ContinuousClock.Instant, fire: @Sendable () -> Void)] = [:]
    private var nextID = 0

    private init() {
        let thread = Thread { [unowned self] in run() }
        thread.name = "deadlines"
        thread.start()
    }

    func add(deadline: ContinuousClock.Instant, fire: @escaping @Sendable () -> Void) -> Int {
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        if entries.isEmpty { condition.signal() }  // only a sleeping watcher needs waking
        entries[nextID] = (deadline, fire)
        return nextID
    }

    func remove(_ id: Int) {
        condition.lock()
        entries[id] = nil
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while entries.isEmpty { condition.wait() }
            // A 25 ms tick is precise enough for request deadlines and costs nothing when idle.
            condition.wait(until: Date(timeIntervalSinceNow: 0.025))
            let now = ContinuousClock.now
            let expired = entries.filter { $0.value.deadline <= now }
            for id in expired.keys { entries[id] = nil }
            condition.unlock()
            for entry in expired.values { entry.fire() }
        }
    }
}

/// Resumes a continuation with whichever result arrives first; later ones are dropped.
private final class FirstResult<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?
    private var finished = false
    private var cleanup: (@Sendable () -> Void)?

    func install(_ continuation: CheckedContinuation<T, any Error>) {
        lock.lock(); self.continuation = continuation; lock.unlock()
    }

    func onFinish(_ action: @escaping @Sendable () -> Void) {
        lock.lock()
        if finished { lock.unlock(); action(); return }
        cleanup = action
        lock.unlock()
    }

    @discardableResult
    func finish(_ result: Result<T, any Error>) -> Bool {
        lock.lock()
        guard !finished, let continuation else { lock.unlock(); return false }
        finished = true
        self.continuation = nil
        let action = cleanup
        cleanup = nil
        lock.unlock()
        continuation.resume(with: result)
        action?()
        return true
    }
}
