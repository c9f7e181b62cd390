import Foundation
import TestSupport
import Testing

@testable import HTTPServer

/// Records what the middleware saw of each request, as the access log and metrics would.
final class SeenRequests: HTTPMiddleware, @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [(method: String, route: String, status: Int)] = []

    func handle(_ request: HTTPRequest, next: HTTPHandler) async throws -> HTTPResponse {
        let response = try await next(request)
        lock.withLock { seen.append((request.normalizedMethod, request.route, response.status)) }
        return response
    }

    var all: [(method: String, route: String, status: Int)] {
        lock.lock()
        defer { lock.unlock() }
        return seen
    }
}

func methodTestRouter(_ seen: SeenRequests) -> Router {
    var router = Router()
    router.use(seen)
    router.get("/items/{id}") { request in
        HTTPResponse(
            status: 200, headers: ["Content-Type": "text/plain", "X-Item": try request.parameter("id")],
            body: Data("item body".utf8))
    }
    router.post("/items/{id}") { _ in .text("posted") }
    router.post("/upload") { _ in .text("uploaded") }
    return router
}

@Suite struct Methods {
    @Test(arguments: [
        ("GET", "GET"), ("HEAD", "HEAD"), ("POST", "POST"), ("PUT", "PUT"), ("DELETE", "DELETE"),
        ("PATCH", "PATCH"), ("OPTIONS", "OPTIONS"), ("BREW", "OTHER"), ("PROPFIND", "OTHER"),
        ("get", "OTHER"), ("X-\(UUID().uuidString)", "OTHER"),
    ])
    func observabilitySeesOnlyAFewMethodNames(method: String, expected: String) {
        #expect(HTTPRequest(method: method, path: "/").normalizedMethod == expected)
        #expect(HTTPRequestHead(method: method, path: "/").normalizedMethod == expected)
    }

    @Test(arguments: ["GET", "BREW", "M-SEARCH", "X_Y.Z!#$%&'*+^`|~9"])
    func tokensAreMethods(method: String) { #expect(HTTPMethod.isToken(method)) }

    @Test(arguments: ["", "G T", "GE(T", "GET/", "G\"T", "GÉT", "G\tT", "{GET}", "GET:"])
    func nonTokensAreNot(method: String) { #expect(!HTTPMethod.isToken(method)) }

    @Test func headIsAnsweredLikeGetWithoutTheBody() async throws {
        let seen = SeenRequests()
        let responder = methodTestRouter(seen).build()
        let get = await responder.respond(to: HTTPRequest(method: "GET", path: "/items/7"))
        let head = await responder.respond(to: HTTPRequest(method: "HEAD", path: "/items/7"))
        #expect(get.status == 200 && head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["Content-Length"] == "9")
        #expect(head.headers["X-Item"] == "7")
        #expect(head.headers["Content-Type"] == get.headers["Content-Type"])
        // A path with no GET is still 405 for HEAD, and HEAD is allowed only where GET is.
        let noGet = await responder.respond(to: HTTPRequest(method: "HEAD", path: "/upload"))
        #expect(noGet.status == 405)
        #expect(noGet.headers["Allow"] == "POST")
        #expect(seen.all.map(\.method) == ["GET", "HEAD", "HEAD"])
    }

    @Test func aNonTokenMethodIs400AndNeverReachesMiddleware() async throws {
        let seen = SeenRequests()
        let response = await methodTestRouter(seen).build().respond(to: HTTPRequest(method: "GE(T", path: "/items/7"))
        #expect(response.status == 400)
        #expect(seen.all.isEmpty)
    }

    @Test func unknownMethodsAreCountedAsOther() async throws {
        let seen = SeenRequests()
        let responder = methodTestRouter(seen).build()
        for method in ["BREW", "PROPFIND", "XYZZY"] {
            #expect(await responder.respond(to: HTTPRequest(method: method, path: "/items/7")).status == 405)
        }
        #expect(seen.all.map(\.method) == ["OTHER", "OTHER", "OTHER"])
    }

    @Test func aHeaderCheckRefusesBeforeTheHandlerInProcessToo() async throws {
        var router = Router()
        router.post(
            "/upload",
            headerCheck: { head in
                head.headers["Authorization"] == nil
                    ? HTTPError(status: 401, code: "UNAUTHORIZED", message: "no credentials").response : nil
            }
        ) { request in .text("got \(request.body.count)") }
        let responder = router.build()
        let refused = await responder.respond(to: HTTPRequest(method: "POST", path: "/upload", body: Data(count: 10)))
        #expect(refused.status == 401)
        let accepted = await responder.respond(
            to: HTTPRequest(
                method: "POST", path: "/upload", headers: ["Authorization": "x"],
                body: Data(count: 10)))
        #expect(accepted.status == 200)
        #expect(String(decoding: accepted.body, as: UTF8.self) == "got 10")
    }
}

@Suite struct MethodsOverTheSocket {
    @Test func headOnAGetRouteHasGetsHeadersAndNoBody() async throws {
        let seen = SeenRequests()
        let server = try startTestServer(methodTestRouter(seen))
        let get = try await RawHTTP.request(port: server.port, path: "/items/42")
        let head = try await RawHTTP.request(port: server.port, method: "HEAD", path: "/items/42")
        #expect(get.status == 200)
        #expect(get.text == "item body")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["content-length"] == "9")
        #expect(head.headers["x-item"] == "42")
        #expect(head.headers["content-type"] == "text/plain")
        let wrong = try await RawHTTP.request(port: server.port, method: "DELETE", path: "/items/42")
        #expect(wrong.status == 405)
        #expect(wrong.headers["allow"] == "GET, HEAD, POST")
        await server.shutdown()
    }

    @Test func aNonTokenMethodIs400BeforeRouting() async throws {
        let seen = SeenRequests()
        let server = try startTestServer(methodTestRouter(seen))
        let response = try await RawHTTP.exchange(
            port: server.port, pieces: [Data("GE(T /items/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)])
        #expect(response.status == 400)
        #expect(seen.all.isEmpty, "a request that is not HTTP was logged: \(seen.all)")
        await server.shutdown()
    }

    @Test func brewIsCountedAsOther() async throws {
        let seen = SeenRequests()
        let server = try startTestServer(methodTestRouter(seen))
        #expect(try await RawHTTP.request(port: server.port, method: "BREW", path: "/items/1").status == 405)
        #expect(try await RawHTTP.request(port: server.port, method: "PROPFIND", path: "/nowhere").status == 404)
        #expect(try await RawHTTP.request(port: server.port, path: "/items/1").status == 200)
        #expect(seen.all.map(\.method) == ["OTHER", "OTHER", "GET"])
        await server.shutdown()
    }
}

/// A server on a free port with small limits a test can reach.
func startTestServer(
    _ router: Router, configure: (inout HTTPServer.Configuration) -> Void = { _ in }
) throws -> HTTPServer {
    var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
    configuration.threadCount = 2
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, responder: router.build(handlerTimeout: .seconds(20)))
    try server.start()
    return server
}
