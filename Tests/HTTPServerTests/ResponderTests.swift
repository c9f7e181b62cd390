import Foundation
import TestSupport
import Testing

@testable import HTTPServer

// Generous by default: on a loaded machine a trivial handler may wait for a thread; the deadline test sets its own.
private func responder(timeout: Duration = .seconds(60)) -> Responder {
    var router = Router()
    router.get("/healthz") { _ in .text("ok") }
    router.get("/v1/transactions/{store}/{transaction_id}") { request in
        .json(["store": try request.parameter("store"), "id": try request.parameter("transaction_id")])
    }
    router.post("/v1/transactions/{store}/{transaction_id}") { _ in .text("posted") }
    router.get("/boom") { _ in throw CocoaError(.fileNoSuchFile) }
    router.get("/slow") { _ in
        try await Task.sleep(for: .seconds(30))
        return .text("late")
    }
    return router.build(handlerTimeout: timeout)
}

private func body(_ response: HTTPResponse) throws -> [String: String] {
    try JSONDecoder().decode([String: String].self, from: response.body)
}

@Suite struct Routing {
    /// Found by schemathesis: "/" followed by an emoji modifier or a combining mark is one
    /// Character, so splitting the path by Character missed the slash and answered 404.
    @Test(arguments: ["\u{1F3FB}", "\u{0301}x", "e\u{0301}", "\u{200D}"])
    func aSegmentStartingWithAnExtendingScalarIsStillASegment(_ id: String) async throws {
        let response = await responder().respond(
            to: HTTPRequest(method: "GET", path: "/v1/transactions/app_store/\(id)"))
        #expect(response.status == 200)
        #expect(try body(response) == ["store": "app_store", "id": id])
    }

    @Test func pathParametersAreExtracted() async throws {
        let response = await responder().respond(
            to: HTTPRequest(method: "GET", path: "/v1/transactions/app_store/2000000123"))
        #expect(response.status == 200)
        #expect(try body(response) == ["store": "app_store", "id": "2000000123"])
    }

    @Test func unknownPathIs404WithAJSONError() async throws {
        let response = await responder().respond(to: HTTPRequest(method: "GET", path: "/nope"))
        #expect(response.status == 404)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(try body(response)["error"] == "NOT_FOUND")
    }

    @Test func wrongMethodIs405WithAllow() async throws {
        let response = await responder().respond(to: HTTPRequest(method: "DELETE", path: "/v1/transactions/a/b"))
        #expect(response.status == 405)
        #expect(response.headers["Allow"] == "GET, HEAD, POST")
        #expect(try body(response)["error"] == "METHOD_NOT_ALLOWED")
    }

    @Test func requestIDIsEchoedOrGenerated() async throws {
        let given = await responder().respond(
            to: HTTPRequest(method: "GET", path: "/healthz", headers: ["X-Request-Id": "abc-123"]))
        #expect(given.headers["X-Request-Id"] == "abc-123")
        let generated = await responder().respond(to: HTTPRequest(method: "GET", path: "/healthz"))
        let id = try #require(generated.headers["X-Request-Id"])
        // A lower-case version 4 UUID, the same text Foundation would write for those bytes.
        let uuid = try #require(UUID(uuidString: id))
        #expect(uuid.uuidString.lowercased() == id)
        #expect(Array(id)[14] == "4" && "89ab".contains(Array(id)[19]))
        // Ids come from a 4 KB buffer of random bytes (256 ids): across several refills none repeats.
        var others: Set<String> = []
        for _ in 0..<1_000 { others.insert(Responder.freshRequestID()) }
        #expect(others.count == 1_000)
        #expect(others.allSatisfy { UUID(uuidString: $0)?.uuidString.lowercased() == $0 })
        // A hostile id (control characters, log injection) is replaced, not echoed.
        let hostile = await responder().respond(
            to: HTTPRequest(method: "GET", path: "/healthz", headers: ["X-Request-Id": "a\nb"]))
        #expect(hostile.headers["X-Request-Id"] != "a\nb")
    }

    @Test func unexpectedErrorsAre500WithoutDetails() async throws {
        let response = await responder().respond(to: HTTPRequest(method: "GET", path: "/boom"))
        #expect(response.status == 500)
        #expect(try body(response) == ["error": "INTERNAL_ERROR", "message": "internal error"])
    }

    @Test func aHandlerPastItsDeadlineGets503() async throws {
        // The handler sleeps 30 s and would answer 200: only the deadline answers 503.
        let response = await responder(timeout: .milliseconds(200)).respond(
            to: HTTPRequest(method: "GET", path: "/slow"))
        #expect(response.status == 503)
        #expect(try body(response)["error"] == "DEADLINE_EXCEEDED")
    }
}

@Suite struct HeaderNameCase {
    /// Header names lower-cased by hand agree with `lowercased()` for every token a client can send.
    @Test func lowercasedNameAgreesWithFoundation() {
        let tokenCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~")
        var generator = SeededRandom()
        var names = ["X-Client-ID", "x-forwarded-for", "Content-Type", "", "A", "z"]
        for _ in 0..<2_000 {
            names.append(
                String(
                    (0..<Int.random(in: 1...24, using: &generator)).map { _ in
                        tokenCharacters.randomElement(using: &generator)!
                    }))
        }
        for name in names {
            #expect(HTTPHeaders.lowercasedName(name) == name.lowercased(), "\(name) (\(generator.replay))")
        }
    }

    /// The byte comparison of names agrees with comparing their lower-cased forms, for token
    /// names in any mix of cases, names one byte apart, and non-ASCII bytes (folded by neither:
    /// `lowercased()` would fold "É", a field name never does).
    @Test func sameNameAgreesWithLowerCasedTokens() {
        let tokenCharacters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-.^_`|~@[")
        var generator = SeededRandom()
        var pairs: [(String, String)] = [
            ("Content-Length", "content-length"), ("X-Client-Id", "X-CLIENT-ID"), ("", ""),
            ("@", "`"), ("[", "{"), ("É", "é"), ("aÉ", "AÉ"), ("Host", "Hosts"),
        ]
        for _ in 0..<3_000 {
            let name = String(
                (0..<Int.random(in: 1...24, using: &generator)).map { _ in
                    tokenCharacters.randomElement(using: &generator)!
                })
            let flipped = String(
                name.map { Bool.random(using: &generator) ? Character($0.uppercased()) : Character($0.lowercased()) })
            var changed = Array(name.utf8)
            changed[Int.random(in: 0..<changed.count, using: &generator)] ^= UInt8(
                1 << Int.random(in: 0...6, using: &generator))
            pairs.append((name, flipped))
            pairs.append((name, String(decoding: changed, as: UTF8.self)))
        }
        func asciiLowered(_ text: String) -> [UInt8] { text.utf8.map { $0 >= 65 && $0 <= 90 ? $0 | 0x20 : $0 } }
        for (a, b) in pairs {
            #expect(
                HTTPHeaders.sameName(a, b) == (asciiLowered(a) == asciiLowered(b)), "\(a) / \(b) (\(generator.replay))")
        }
        // A bridged or otherwise non-contiguous string takes the iterator and answers the same.
        let bridged = NSString(string: "Content-Type") as String
        #expect(HTTPHeaders.sameName(bridged, "content-type"))
        #expect(!HTTPHeaders.sameName(bridged, "content-typf"))
    }
}
