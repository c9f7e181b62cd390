import Foundation
import TestSupport
import Testing

@testable import HTTPServer

/// Routing reads the path as sent: split at its real slashes, then each segment percent-decoded,
/// so an id holding a `/` (sent as `%2F`) reaches its route whole.
@Suite struct EncodedPaths {
    private static func responder() -> Responder {
        var router = Router()
        router.get("/v1/players/{player_id}/entitlements") { request in
            .json(["player_id": try request.parameter("player_id")])
        }
        router.post("/v1/transactions/{store}/{transaction_id}/consumption") { request in
            .json(["store": try request.parameter("store"), "id": try request.parameter("transaction_id")])
        }
        router.get("/v1/players/{player_id}/{section}/entitlements") { _ in .text("split") }
        return router.build(handlerTimeout: .seconds(60))
    }

    private static func body(_ response: HTTPResponse) throws -> [String: String] {
        try JSONDecoder().decode([String: String].self, from: response.body)
    }

    @Test(arguments: [
        ("guild%2F42", "guild/42"), ("guild%2f42", "guild/42"), ("a%252Fb", "a%2Fb"), ("p%20one", "p one"),
        ("%C4%B0da", "\u{130}da"), ("plain", "plain"), ("a+b", "a+b"),
    ])
    func anEncodedSlashStaysInsideItsParameter(_ sent: String, _ decoded: String) async throws {
        let response = await Self.responder().respond(
            to: HTTPRequest(method: "GET", path: "/v1/players/\(sent)/entitlements"))
        #expect(response.status == 200)
        #expect(try Self.body(response) == ["player_id": decoded])
    }

    @Test func literalsMatchTheirEncodedForm() async throws {
        let response = await Self.responder().respond(
            to: HTTPRequest(method: "GET", path: "/v1/%70layers/p%2F1/entitlements"))
        #expect(try Self.body(response) == ["player_id": "p/1"])
        // An encoded slash where a literal is expected is not that literal.
        let literal = await Self.responder().respond(
            to: HTTPRequest(method: "GET", path: "/v1%2Fplayers/p/entitlements"))
        #expect(literal.status == 404)
    }

    @Test(arguments: ["%zz", "%2", "%", "%G0", "%00", "%C3%28", "%FF", "a%2Fb%"])
    func aBadEscapeIs400NotAServerError(_ segment: String) async throws {
        let response = await Self.responder().respond(
            to: HTTPRequest(method: "GET", path: "/v1/players/\(segment)/entitlements"))
        #expect(response.status == 400)
        #expect(try Self.body(response)["error"] == "INVALID_FIELD")
    }

    /// libmicrohttpd decodes the whole path before it is handed over; routing must read the
    /// request line's target instead, or `guild%2F42` arrives as two segments.
    @Test func overTheSocketAnEncodedSlashDoesNotSplitThePath() async throws {
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.threadCount = 2
        let server = HTTPServer(configuration: configuration, responder: Self.responder())
        try server.start()
        let found = try await RawHTTP.request(port: server.port, path: "/v1/players/guild%2F42/entitlements?x=1")
        #expect(found.status == 200, "\(found.text)")
        #expect(found.text != "split")
        #expect(try JSONDecoder().decode([String: String].self, from: found.body) == ["player_id": "guild/42"])
        // With a body, the route is found from the head alone, before the body is read.
        let posted = try await RawHTTP.request(
            port: server.port, method: "POST", path: "/v1/transactions/app_store/a%2Fb/consumption",
            headers: ["Content-Type": "application/json"], body: Data("{}".utf8))
        #expect(posted.status == 200, "\(posted.text)")
        #expect(
            try JSONDecoder().decode([String: String].self, from: posted.body) == ["store": "app_store", "id": "a/b"])
        for bad in ["/v1/players/%zz/entitlements", "/v1/players/%C3%28/entitlements"] {
            let refused = try await RawHTTP.request(port: server.port, path: bad)
            #expect(refused.status == 400, "\(bad): \(refused.status) \(refused.text)")
            let refusedWithBody = try await RawHTTP.request(
                port: server.port, method: "POST", path: bad,
                headers: ["Content-Type": "application/json"], body: Data("{}".utf8))
            #expect(refusedWithBody.status == 400, "\(bad): \(refusedWithBody.status) \(refusedWithBody.text)")
        }
        await server.shutdown()
    }
}
