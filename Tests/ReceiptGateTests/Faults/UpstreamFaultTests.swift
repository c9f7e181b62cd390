import AlogameGateway
import AppStore
import AppStoreTestSupport
import Foundation
import HTTPClient
import HTTPServer
import OpenSSLCrypto
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// The App Store Server API misbehaving under a real request (the Alogame support lookup asks it
/// for an order): too slow, 500, 429 with `Retry-After`, and garbage. Each is retried a bounded
/// number of times (3 attempts, 1 s per attempt here) and ends as a clean `VERIFIER_ERROR`, and the
/// client's transfer threads are free again afterwards.
@Suite(.serialized) struct UpstreamFaults {
    enum Mode: Sendable { case slow, serverError, rateLimited, garbage, healthy }

    /// A purpose-built stand-in for Apple's order lookup endpoint that misbehaves as told.
    final class Upstream: Sendable {
        let mode = LockedBox(Mode.healthy)
        let hits = LockedBox(0)
        let server: HTTPServer

        init() throws {
            var router = Router()
            let mode = mode, hits = hits
            router.get("/inApps/v1/lookup/{orderID}") { _ in
                hits.update { $0 += 1 }
                switch mode.get() {
                case .slow:
                    // Longer than the client's 1 s timeout: an attempt not cut there is answered
                    // 200 after 4 s, and the lookup's status shows it.
                    try? await Task.sleep(for: .seconds(4))
                    return HTTPResponse(
                        status: 200, headers: ["Content-Type": "application/json"],
                        body: Data(#"{"status":1,"signedTransactions":[]}"#.utf8))
                case .serverError: return HTTPResponse(status: 500, body: Data("upstream broke".utf8))
                case .rateLimited: return HTTPResponse(status: 429, headers: ["Retry-After": "1"])
                case .garbage:
                    return HTTPResponse(
                        status: 200, headers: ["Content-Type": "application/json"],
                        body: Data([0x7b, 0xff, 0x00, 0x22, 0x3c]))
                case .healthy:
                    return HTTPResponse(
                        status: 200, headers: ["Content-Type": "application/json"],
                        body: Data(#"{"status":1,"signedTransactions":[]}"#.utf8))
                }
            }
            server = HTTPServer(
                configuration: .init(host: "127.0.0.1", port: 0),
                responder: router.build(handlerExecutor: FakeServing.executor))
            try server.start()
        }
    }

    static func start(_ upstream: Upstream) async throws -> FaultService {
        let pki = try AppleTestPKI()
        var appStore = AppStoreConfiguration(trustRoots: [pki.root])
        appStore.serverAPIKey = .init(
            keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID,
            privateKey: try PrivateKey.generateP256())
        appStore.serverAPIProductionURL = "http://127.0.0.1:\(upstream.server.port)"
        appStore.serverAPISandboxURL = "http://127.0.0.1:\(upstream.server.port)"
        var http = HTTPClient.Configuration()
        http.timeout = .seconds(1)
        http.retry = .init(maxAttempts: 3, baseDelay: .milliseconds(50), maxDelay: .milliseconds(200))
        let provider = AppStoreProvider(
            verifier: AppStoreSignedDataVerifier(trustRoots: [pki.root]), configuration: appStore,
            http: HTTPClient(http))
        return try await FaultService.start(
            databaseURL: try await TestDatabase.makeDatabase(prefix: "upstream"), provider: provider,
            dialects: [AlogameGateway()])
    }

    static func lookUp(_ running: FaultService) async throws -> RawHTTP.Response {
        try await running.client.post("/iap/gateway/lookup-receipt", json: ["order_id": "MQ5VLT9VXT"])
    }

    /// (mode, attempts Apple sees, least and most seconds the answer takes). What a broken bound
    /// does shows in the status and the attempts (an attempt not cut at 1 s gets the slow store's
    /// 200; a `Retry-After` ignored shows in the attempts and the least time), so the upper bounds
    /// only catch a hang and leave a loaded machine room.
    @Test(arguments: [
        (Mode.slow, 3, 3.0, 45.0), (.serverError, 3, 0.0, 30.0), (.rateLimited, 3, 2.0, 30.0), (.garbage, 1, 0.0, 30.0),
    ])
    func aMisbehavingStoreIsABoundedCleanVerifierError(
        mode: Mode, attempts: Int, atLeast: Double, atMost: Double
    ) async throws {
        let upstream = try Upstream()
        let running = try await Self.start(upstream)
        defer { running.stop(); Task.detached { await upstream.server.shutdown() } }

        upstream.mode.set(mode)
        let started = ContinuousClock.now
        let response = try await Self.lookUp(running)
        let elapsed = ContinuousClock.now - started
        #expect(response.status == 502, "\(response.text)")
        #expect(try response.json()["error"] as? String == "VERIFIER_ERROR")
        #expect(try response.json()["success"] as? Bool == false)
        #expect(upstream.hits.get() == attempts, "attempts made: \(upstream.hits.get())")
        #expect(
            elapsed >= .milliseconds(Int(atLeast * 1000)) && elapsed <= .milliseconds(Int(atMost * 1000)),
            "took \(elapsed)")

        // Nothing is left stuck: with the store healthy again, two rounds of as many lookups at
        // once as the client has transfer threads are all answered. A thread still held by the
        // slow store would leave a lookup queued past its 1 s timeout, a 502; a round at a time,
        // no lookup waits behind another on a loaded machine.
        upstream.mode.set(.healthy)
        var statuses: [Int] = []
        for _ in 0..<2 {
            statuses += try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 { group.addTask { try await Self.lookUp(running).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        #expect(statuses == Array(repeating: 200, count: 8))
    }
}
