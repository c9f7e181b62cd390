import Foundation
import HTTPServer
import TestSupport
import Testing

@testable import HTTPClient

/// A local fake upstream on loopback, speaking real HTTP through our own server module.
private final class FakeUpstream: @unchecked Sendable {
    let server: HTTPServer
    let hits = LockedBox<[String: Int]>([:])

    init(_ configure: (inout Router, LockedBox<[String: Int]>) -> Void) throws {
        var router = Router()
        configure(&router, hits)
        server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0),
            responder: router.build(handlerExecutor: FakeServing.executor))
        try server.start()
    }

    var baseURL: String { "http://127.0.0.1:\(server.port)" }
    func count(_ key: String) -> Int { hits.get()[key] ?? 0 }
}

private func hit(_ hits: LockedBox<[String: Int]>, _ key: String) -> Int {
    hits.update {
        $0[key, default: 0] += 1; return $0[key]!
    }
}

/// Generous by default: the fake upstreams' handlers share the test process's small, busy task
/// pool, and a slow first answer must not turn into a retry the test counts. Timeout tests say theirs.
private func client(
    _ base: String, attempts: Int = 3, timeout: Duration = .seconds(60), waits: WaitRecorder? = nil,
    now: (@Sendable () -> Date)? = nil
) -> HTTPClient {
    var configuration = HTTPClient.Configuration(baseURL: base)
    configuration.retry = .init(maxAttempts: attempts, baseDelay: .milliseconds(20), maxDelay: .milliseconds(100))
    configuration.timeout = timeout
    if let waits { configuration.sleep = { wait in waits.waits.update { $0.append(wait) } } }
    if let now { configuration.now = now }
    return HTTPClient(configuration)
}

/// The waits a client asked for between attempts, recorded in place of sleeping them.
private final class WaitRecorder: Sendable {
    let waits = LockedBox<[Duration]>([])
}

@Suite struct Requests {
    /// The transfer loop sleeps in its poll until a request wakes it; a burst of requests wakes it
    /// once. Every request, alone or in a burst, must still be started: with the loop's own wait
    /// an hour long, a request whose wake-up was lost would wait that hour, past this test's limit.
    @Test(.timeLimit(.minutes(2))) func aRequestNeverWaitsForTheLoopsIdleWait() async throws {
        let upstream = try FakeUpstream { router, hits in
            router.post("/one") { _ in
                _ = hit(hits, "one")
                return HTTPResponse.json(["ok": true])
            }
        }
        var configuration = HTTPClient.Configuration(baseURL: upstream.baseURL)
        configuration.retry = .none
        configuration.timeout = .seconds(3600)
        configuration.idleWait = .seconds(3600)
        configuration.concurrentTransfers = 8
        let http = HTTPClient(configuration)
        for _ in 0..<20 {
            #expect(try await http.send(.init(method: "POST", url: "/one", body: Data("{}".utf8))).status == 200)
        }
        for _ in 0..<5 {
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        try await http.send(.init(method: "POST", url: "/one", body: Data("{}".utf8))).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 20))
        }
        #expect(upstream.count("one") == 120)
        await upstream.server.shutdown()
    }

    @Test func postCarriesHeadersAndBodyAndReadsTheResponse() async throws {
        let upstream = try FakeUpstream { router, _ in
            router.post("/echo") { request in
                var response = HTTPResponse.json(
                    [
                        "auth": request.headers["Authorization"] ?? "",
                        "body": String(decoding: request.body, as: UTF8.self),
                    ], status: 201)
                response.headers.add("X-Upstream", "fake")
                return response
            }
        }
        // A generous timeout: on a loaded machine a slow first answer must not turn into a retry here.
        let response = try await client(upstream.baseURL, timeout: .seconds(60)).send(
            .init(
                method: "POST", url: "/echo",
                headers: [("Authorization", "Bearer t"), ("Content-Type", "application/json")],
                body: Data(#"{"a":1}"#.utf8)))
        #expect(response.status == 201)
        #expect(response.header("x-upstream") == "fake")
        #expect(
            try JSONDecoder().decode([String: String].self, from: response.body) == [
                "auth": "Bearer t", "body": #"{"a":1}"#,
            ])
        #expect(response.attempts == 1)
        await upstream.server.shutdown()
    }

    @Test func relativeURLWithoutABaseIsRejected() async throws {
        await #expect(throws: HTTPClientError(.invalidURL, "")) { try await HTTPClient().send(.init(url: "/x")) }
    }
}

/// Kept-alive connections outlive a lull: a burst's connections are still open, and reused, after
/// requests sent one at a time (an outbox that delivers in bursts would otherwise reconnect, a
/// TLS handshake on both ends, every dozen webhooks).
@Suite struct Connections {
    /// The local ports of this network namespace's established connections to `port` (the
    /// client's ends): the same ports later are the same connections, kept open and reused.
    static func established(to port: Int) -> Set<String> {
        // Read to its end: the kernel writes the table a page at a time, and its file has no size.
        guard let file = FileHandle(forReadingAtPath: "/proc/net/tcp"), let bytes = try? file.readToEnd() else {
            return []
        }
        try? file.close()
        let hex = String(port, radix: 16, uppercase: true)
        let remote = ":" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return Set(
            String(decoding: bytes, as: UTF8.self).split(separator: "\n").dropFirst().compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count > 3, fields[2].hasSuffix(remote), fields[3] == "01" else { return nil }
                return String(fields[1])
            })
    }

    @Test func aBurstsConnectionsStayOpenThroughALullAndAreReused() async throws {
        let burst = 12
        let arrived = LockedBox(0)
        let upstream = try FakeUpstream { router, hits in
            router.post("/hook") { _ in
                _ = hit(hits, "hook")
                arrived.update { $0 += 1 }
                // The burst's requests are answered once all of them are under way: one connection each.
                _ = await eventually { arrived.get() >= burst }
                return .text("ok")
            }
        }
        var configuration = HTTPClient.Configuration(baseURL: upstream.baseURL)
        configuration.retry = .none
        configuration.timeout = .seconds(60)
        configuration.concurrentTransfers = 32
        let shared = HTTPClient(configuration)
        func post() async throws -> Int {
            try await shared.send(.init(method: "POST", url: "/hook", body: Data("{}".utf8))).status
        }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<burst { group.addTask { try await post() } }
            for try await status in group { #expect(status == 200) }
        }
        #expect(await eventually { Self.established(to: upstream.server.port).count == burst }, "a connection each")
        let opened = Self.established(to: upstream.server.port)
        for _ in 0..<burst { #expect(try await post() == 200) }  // a lull: one at a time
        #expect(Self.established(to: upstream.server.port) == opened, "the lull closed none of them")
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<burst { group.addTask { try await post() } }
            for try await status in group { #expect(status == 200) }
        }
        #expect(Self.established(to: upstream.server.port) == opened, "the next burst reused them and opened none")
        #expect(upstream.count("hook") == 3 * burst)
        await upstream.server.shutdown()
    }
}

@Suite struct Retries {
    @Test func serverErrorsAreRetriedUntilSuccess() async throws {
        let upstream = try FakeUpstream { router, hits in
            router.get("/flaky") { _ in
                hit(hits, "flaky") < 3 ? HTTPResponse.text("down", status: 503) : .text("up")
            }
        }
        let response = try await client(upstream.baseURL).send(.init(url: "/flaky"))
        #expect(response.status == 200)
        #expect(response.attempts == 3)
        #expect(upstream.count("flaky") == 3)
        await upstream.server.shutdown()
    }

    @Test func afterTheLastAttemptTheErrorResponseIsReturned() async throws {
        let upstream = try FakeUpstream { router, hits in
            router.get("/down") { _ in
                _ = hit(hits, "down"); return .text("nope", status: 500)
            }
            router.get("/bad") { _ in
                _ = hit(hits, "bad"); return .text("bad request", status: 400)
            }
        }
        let down = try await client(upstream.baseURL, attempts: 4).send(.init(url: "/down"))
        #expect(down.status == 500)
        #expect(upstream.count("down") == 4)
        // A client error is final: never retried.
        let bad = try await client(upstream.baseURL, attempts: 4).send(.init(url: "/bad"))
        #expect(bad.status == 400)
        #expect(upstream.count("bad") == 1)
        // A request marked not retryable is sent once.
        var once = HTTPClient.Request(url: "/down")
        once.retryable = false
        _ = try await client(upstream.baseURL, attempts: 4).send(once)
        #expect(upstream.count("down") == 5)
        await upstream.server.shutdown()
    }

    @Test func retryAfterIsHonoured() async throws {
        let upstream = try FakeUpstream { router, hits in
            router.get("/limited") { _ in
                if hit(hits, "limited") == 1 {
                    return HTTPResponse(status: 429, headers: ["Retry-After": "1"])
                }
                return .text("ok")
            }
            router.get("/later") { _ in HTTPResponse(status: 503, headers: ["Retry-After": "3600"]) }
        }
        let recorder = WaitRecorder()
        let response = try await client(upstream.baseURL, waits: recorder).send(.init(url: "/limited"))
        #expect(response.status == 200)
        #expect(response.attempts == 2)
        #expect(recorder.waits.get() == [.seconds(1)], "the one wait before the retry is the one Retry-After asked for")
        // Asked to come back in an hour: not waited for, the 503 is returned at once.
        let later = try await client(upstream.baseURL).send(.init(url: "/later"))
        #expect(later.status == 503)
        #expect(later.attempts == 1)
        await upstream.server.shutdown()
    }

    /// A `Retry-After` date is read against the client's clock: the wait is the time from that
    /// clock's now to the date.
    @Test func aRetryAfterDateIsWaitedForByTheClientsClock() async throws {
        let upstream = try FakeUpstream { router, hits in
            router.get("/limited") { _ in
                if hit(hits, "limited") == 1 {
                    return HTTPResponse(status: 503, headers: ["Retry-After": "Mon, 12 Jan 1970 13:47:00 GMT"])
                }
                return .text("ok")
            }
        }
        let recorder = WaitRecorder()
        let stillClock: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_000_000) }
        let response = try await client(upstream.baseURL, waits: recorder, now: stillClock).send(
            .init(url: "/limited"))
        #expect(response.status == 200)
        #expect(recorder.waits.get() == [.seconds(20)], "twenty seconds before the date by the client's clock")
        await upstream.server.shutdown()
    }

    @Test func retryAfterParsesSecondsAndHTTPDates() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(HTTPClient.parseRetryAfter("120", now: now) == .seconds(120))
        let date = HTTPClient.parseRetryAfter("Mon, 12 Jan 1970 13:47:00 GMT", now: now)
        #expect(date == .milliseconds(Int((1_000_020 - 1_000_000) * 1000)))
        #expect(HTTPClient.parseRetryAfter("soon", now: now) == nil)
    }

    @Test func backoffGrowsAndStaysWithinBounds() {
        let policy = HTTPClient.RetryPolicy(maxAttempts: 10, baseDelay: .milliseconds(100), maxDelay: .seconds(1))
        for attempt in 1...8 {
            let step = min(Duration.milliseconds(100) * (1 << (attempt - 1)), .seconds(1))
            let delays = (0..<50).map { _ in HTTPClient.backoff(attempt: attempt, policy: policy) }
            #expect(
                delays.allSatisfy { $0 >= step / 2 && $0 <= step },
                "attempt \(attempt): \(delays) outside \(step / 2)...\(step)")
            // Jitter: retries of many clients must not line up. Fifty draws of the random half
            // spread over most of it (a fixed delay, or a tiny jitter, spans nothing).
            let spread = (delays.max() ?? .zero) - (delays.min() ?? .zero)
            #expect(spread >= step / 4, "attempt \(attempt): delays span only \(spread) of a possible \(step / 2)")
            #expect(Set(delays).count > 40, "attempt \(attempt): repeated delays \(delays)")
        }
    }
}

@Suite struct Failures {
    @Test func slowUpstreamTimesOut() async throws {
        let upstream = try FakeUpstream { router, _ in
            router.get("/slow") { _ in
                try await Task.sleep(for: .seconds(3)); return .text("late")
            }
        }
        await #expect(throws: HTTPClientError(.timeout, "")) {
            try await client(upstream.baseURL, attempts: 1, timeout: .milliseconds(300)).send(.init(url: "/slow"))
        }
        await upstream.server.shutdown()
    }

    /// A request waiting for a transfer slot (all busy with slow calls) gives up at its own
    /// timeout, not when a slot frees up.
    @Test func theTimeoutCoversTheWaitForATransferSlot() async throws {
        let upstream = try FakeUpstream { router, hits in
            router.get("/slow") { _ in
                _ = hit(hits, "slow"); try await Task.sleep(for: .seconds(10)); return .text("late")
            }
            router.get("/fast") { _ in .text("ok") }
        }
        var configuration = HTTPClient.Configuration(baseURL: upstream.baseURL)
        configuration.retry = .init(maxAttempts: 1, baseDelay: .milliseconds(20), maxDelay: .milliseconds(100))
        configuration.concurrentTransfers = 1
        let shared = HTTPClient(configuration)
        let slowAnswered = LockedBox(false)
        let slow = Task {
            _ = try? await shared.send(.init(url: "/slow"))
            slowAnswered.set(true)
        }
        // The one slot is taken once the slow call reached the upstream.
        #expect(await eventually { upstream.count("slow") == 1 }, "the slow call holds the one slot")
        var queued = HTTPClient.Request(url: "/fast")
        queued.timeout = .milliseconds(300)
        await #expect(throws: HTTPClientError(.timeout, "")) { try await shared.send(queued) }
        #expect(!slowAnswered.get(), "it waited for the busy slot instead of its own timeout")
        _ = await slow.value
        await upstream.server.shutdown()
    }

    /// A caller cancelled while its request waits for a transfer slot hears so at once, and the
    /// request is never sent.
    @Test func aRequestCancelledWhileWaitingForATransferSlotIsNeverSent() async throws {
        let upstream = try FakeUpstream { router, hits in
            router.get("/slow") { _ in
                _ = hit(hits, "slow"); try await Task.sleep(for: .seconds(1)); return .text("late")
            }
            router.get("/fast") { _ in
                _ = hit(hits, "fast"); return .text("ok")
            }
        }
        var configuration = HTTPClient.Configuration(baseURL: upstream.baseURL)
        configuration.retry = .none
        configuration.concurrentTransfers = 1
        let shared = HTTPClient(configuration)
        let slowAnswered = LockedBox(false)
        let slow = Task {
            _ = try? await shared.send(.init(url: "/slow"))
            slowAnswered.set(true)
        }
        #expect(await eventually { upstream.count("slow") == 1 }, "the slow call holds the one slot")
        let cancelled = Task { try await shared.send(.init(url: "/fast")) }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        _ = await slow.value
        // Transfers run in order: by the time this one is answered, the cancelled one was passed.
        #expect(try await shared.send(.init(url: "/slow")).status == 200)
        #expect(upstream.count("fast") == 0, "a cancelled caller's request was sent")
        await upstream.server.shutdown()
    }

    /// The libcurl pool lets go of a transfer's job once it has run (a request body, what it captured).
    @Test func whatATransferJobCapturedIsFreedOnceItHasRun() async throws {
        let workers = TransferWorkers(transfers: 1, name: "test-curl")
        defer { workers.close() }
        var weak: WeakBox?
        do {
            let object = Captured()
            weak = WeakBox(object)
            _ = try await workers.perform(
                late: HTTPClientError(.timeout, ""), closed: HTTPClientError(.clientClosed, "")
            ) { _ in
                _ = object
                return 1
            }
        }
        let watched = try #require(weak)
        #expect(await eventually { watched.isReleased }, "the transfer pool still holds a job it ran")
    }

    @Test func refusedConnectionIsRetryableConnectFailure() async throws {
        try await RawHTTP.withRefusingPort { port in
            do {
                _ = try await client("http://127.0.0.1:\(port)", attempts: 2).send(.init(url: "/"))
                Issue.record("a request to a closed port succeeded")
            } catch let error as HTTPClientError {
                #expect(error.code == .connectFailed)
                #expect(error.isRetryable)
            }
        }
    }

    @Test func oversizedResponseIsRefused() async throws {
        let upstream = try FakeUpstream { router, _ in
            router.get("/big") { _ in HTTPResponse(status: 200, body: Data(count: 100_000)) }
        }
        var configuration = HTTPClient.Configuration(baseURL: upstream.baseURL)
        configuration.maxResponseBytes = 10_000
        await #expect(throws: HTTPClientError(.responseTooLarge, "")) {
            try await HTTPClient(configuration).send(.init(url: "/big"))
        }
        await upstream.server.shutdown()
    }
}

@Suite(.serialized) struct TLSVerification {
    @Test func selfSignedPeerIsRejectedUnlessItsCAIsConfigured() async throws {
        let directory = TestDatabase.temporaryDirectory("tls")
        defer { try? FileManager.default.removeItem(at: directory) }
        let cert = directory.appendingPathComponent("cert.pem").path,
            key = directory.appendingPathComponent("key.pem").path
        #expect(
            try run(
                "/usr/bin/openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-days", "1", "-keyout", key, "-out", cert,
                ]) == 0)
        let port = try RawHTTP.freePort()
        let server = try ChildProcess.launch(
            "/usr/bin/openssl",
            ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", cert, "-key", key, "-www", "-quiet"],
            environment: ["PATH": "/usr/bin:/bin"])
        try await waitUntilListening(port)

        var configuration = HTTPClient.Configuration(baseURL: "https://127.0.0.1:\(port)")
        configuration.retry = .none
        await #expect(throws: HTTPClientError(.tlsFailure, "")) {
            try await HTTPClient(configuration).send(.init(url: "/"))
        }

        configuration.caBundlePath = cert
        let response = try await HTTPClient(configuration).send(.init(url: "/"))
        #expect(response.status == 200)
        server.send(SIGKILL)
        _ = try await server.wait(timeout: .seconds(10))
    }
}

private func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
    try ChildProcess.runBlocking(executable, arguments).status
}

private func waitUntilListening(_ port: Int) async throws {
    for _ in 0..<100 {
        if RawHTTP.isListening(port: port) { return }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw HTTPClientError(.connectFailed, "nothing listens on port \(port)")
}
