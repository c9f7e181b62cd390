import Foundation
import HTTPServer
import TestSupport
import Testing

/// Counts calls from handlers and header checks (which run on libmicrohttpd threads).
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}

private func uploadRouter(checks: Counter, handled: Counter) -> Router {
    var router = Router()
    router.post("/echo") { request in
        handled.increment(); return .text("\(request.body.count)")
    }
    router.post(
        "/upload",
        headerCheck: { head in
            checks.increment()
            return head.headers["Authorization"] == nil
                ? HTTPError(status: 401, code: "UNAUTHORIZED", message: "credentials missing").response : nil
        }
    ) { request in
        handled.increment()
        return .text("stored \(request.body.count)")
    }
    return router
}

/// Sends `head`, then `body` one byte every `pause`, until the server answers or hangs up.
/// Sends `head`, then `body` a byte at a time `pause` ms apart, until the server answers or closes;
/// what it answered and how many body bytes it took before that.
private func trickle(port: Int, head: String, body: Data, pause: Int32) async throws -> (response: Data, sent: Int) {
    try await onOwnThread {
        let connection = try RawConnection(port: port)
        connection.send(Data(head.utf8))
        var sent = 0
        for byte in body {
            if connection.becomesReadable(within: pause) { break }  // answered (or cut) mid-request
            if !connection.send(Data([byte])) { break }
            sent += 1
        }
        // Long enough for a handler whose task waits on a busy pool; a cut-off comes far sooner.
        let received = connection.readToEnd(timeout: 60).data
        return (received, sent)
    }
}

@Suite struct ConnectionLimits {
    @Test func oneAddressCannotHoldMoreThanItsShareOfConnections() async throws {
        let server = try startTestServer(uploadRouter(checks: Counter(), handled: Counter())) {
            $0.connectionLimitPerIP = 3
        }
        let port = server.port
        // Three connections from 127.0.0.1, each with a request half sent: the limit is reached.
        var held = try await onOwnThread {
            try (0..<3).map { _ in
                let connection = try RawConnection(port: port)
                connection.send(Data("POST /echo HTTP/1.1\r\nHost: x\r\n".utf8))
                return connection
            }
        }
        // A fourth is accepted by the kernel and closed by the server without an answer, once the
        // server has taken in the three (polled: its thread accepts them in its own time).
        var fourthRefused = false
        let deadline = ContinuousClock.now + .seconds(10)
        while !fourthRefused && ContinuousClock.now < deadline {
            do {
                _ = try await RawHTTP.request(port: port, path: "/echo")
                try await Task.sleep(for: .milliseconds(20))
            } catch is RawHTTP.Failure {
                fourthRefused = true
            }
        }
        #expect(fourthRefused, "a fourth connection from the same address was served")
        // Once one of the three goes away, the address may connect again.
        held.removeFirst()  // closes it
        var status = 0
        for _ in 0..<300 where status == 0 {
            try await Task.sleep(for: .milliseconds(100))
            status = (try? await RawHTTP.request(port: port, method: "POST", path: "/echo"))?.status ?? 0
        }
        #expect(status == 200)
        withExtendedLifetime(held) {}
        await server.shutdown()
    }
}

@Suite struct ReceiveDeadline {
    static func server() throws -> HTTPServer {
        try startTestServer(uploadRouter(checks: Counter(), handled: Counter())) { configuration in
            configuration.requestReceiveTimeoutSeconds = 2
            configuration.connectionTimeoutSeconds = 30  // idle timeout: never reached by a trickle
        }
    }

    @Test func aBodyTrickledPastTheDeadlineIsCutOff() async throws {
        let server = try Self.server()
        // 200 bytes, one every 300 ms: 60 s to finish, never idle for long.
        let (response, sent) = try await trickle(
            port: server.port, head: "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n",
            body: Data(repeating: 65, count: 200), pause: 300)
        // Cut off on the way: the whole body would have taken a minute, the deadline is 2 s.
        // (A request that finishes in time is served: `aSlowRequestThatFinishesInTimeIsServed`.)
        #expect(sent < 200, "the slow request was not cut off at its 2 s deadline")
        let status = (try? RawHTTP.parse(response))?.status
        #expect(status == 408 || response.isEmpty, "answered \(String(decoding: response, as: UTF8.self))")
        await server.shutdown()
    }

    @Test func aHeadTrickledPastTheDeadlineIsCutOff() async throws {
        let server = try Self.server()
        let slowHead = Data(String(repeating: "X-Slow: a\r\n", count: 20).utf8)
        let (response, sent) = try await trickle(
            port: server.port, head: "POST /echo HTTP/1.1\r\n", body: slowHead, pause: 300)
        #expect(sent < slowHead.count, "the slow head was not cut off at its 2 s deadline")
        let status = (try? RawHTTP.parse(response))?.status
        #expect(status == 408 || response.isEmpty, "answered \(String(decoding: response, as: UTF8.self))")
        await server.shutdown()
    }

    @Test func aSlowRequestThatFinishesInTimeIsServed() async throws {
        let server = try Self.server()
        let (response, _) = try await trickle(
            port: server.port, head: "POST /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 4\r\n\r\n",
            body: Data("abcd".utf8), pause: 250)
        let parsed = try RawHTTP.parse(response)
        #expect(parsed.status == 200)
        #expect(parsed.text == "4")
        await server.shutdown()
    }
}

@Suite struct AnsweredFromTheHead {
    @Test func aHugeBodyForAnUnknownPathIs404WithoutBeingRead() async throws {
        let handled = Counter()
        // A body cap above the announced size: only routing can refuse this request early.
        let server = try startTestServer(uploadRouter(checks: Counter(), handled: handled)) {
            $0.maxBodyBytes = 64 << 20
        }
        // 50 MB announced, 5 bytes sent: only an answer that does not wait for the body comes back
        // (a server that waited for the body would have no 404 to give before its receive deadline).
        let head = Data("POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n\r\nhello".utf8)
        let response = try await RawHTTP.exchange(port: server.port, pieces: [head], timeout: 25)
        #expect(response.status == 404)
        #expect(try response.json()["error"] as? String == "NOT_FOUND")
        #expect(response.headers["x-request-id"] != nil)
        #expect(handled.value == 0)
        await server.shutdown()
    }

    @Test func anEightKilobyteHeadIsServedAndAnOversizedHeadRefused() async throws {
        let handled = Counter()
        let server = try startTestServer(uploadRouter(checks: Counter(), handled: handled))
        let body = Data(count: 200_000)  // a body far larger than the connection's memory pool
        let served = try await RawHTTP.request(
            port: server.port, method: "POST", path: "/echo",
            headers: ["X-Long": String(repeating: "a", count: 8 * 1024)], body: body)
        #expect(served.status == 200)
        #expect(served.text == "200000")
        // A head beyond the pool is answered with an error, never served and never a crash.
        let oversized = Data(
            "POST /echo HTTP/1.1\r\nHost: x\r\nX-Long: \(String(repeating: "a", count: 40 * 1024))\r\nContent-Length: 2\r\n\r\nhi"
                .utf8)
        let refused = try await RawHTTP.exchange(port: server.port, pieces: [oversized], timeout: 10)
        #expect((400..<500).contains(refused.status))
        #expect(handled.value == 1)
        // The server still serves the next client.
        #expect(
            try await RawHTTP.request(port: server.port, method: "POST", path: "/echo", body: Data("ok".utf8)).text
                == "2")
        await server.shutdown()
    }

    @Test func aHeaderCheckRefusesBeforeTheBodyIsSent() async throws {
        let checks = Counter(), handled = Counter()
        let server = try startTestServer(uploadRouter(checks: checks, handled: handled))
        // Only the head is sent; the client waits for an answer before sending the 1 MB body.
        let head = Data("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n".utf8)
        let refused = try await RawHTTP.exchange(port: server.port, pieces: [head], timeout: 10)
        #expect(refused.status == 401)
        #expect(try refused.json()["error"] as? String == "UNAUTHORIZED")
        #expect(handled.value == 0)
        #expect(checks.value == 1)
        // With credentials the body is read and the handler runs; the check ran once, not twice.
        let accepted = try await RawHTTP.request(
            port: server.port, method: "POST", path: "/upload",
            headers: ["Authorization": "Bearer x"], body: Data(count: 300))
        #expect(accepted.status == 200)
        #expect(accepted.text == "stored 300")
        #expect(checks.value == 2)
        #expect(handled.value == 1)
        await server.shutdown()
    }
}
