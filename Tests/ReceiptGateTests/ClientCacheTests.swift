import AppStoreTestSupport
import Foundation
import Postgres
import TestSupport
import Testing

/// Clients are kept in memory and plain verifications share commits; these check that what a
/// user relies on did not move: a rotated or disabled client is refused at once by every process,
/// and a purchase is recorded once however the requests are batched. Each reads the batchers'
/// counts to know that the group-commit path is the one it covers.
@Suite(.serialized) struct ClientCacheAcrossProcesses {
    struct Fixture {
        let pki: AppleTestPKI
        let environment: [String: String]
        let clientID: String
        let secret: String
        let pool: PostgresPool
    }

    static func fixture(_ name: String) async throws -> Fixture {
        let pki = try AppleTestPKI()
        let root = TestDatabase.temporaryDirectory(name).appendingPathComponent("root.der")
        try pki.root.derEncoded.write(to: root)
        var environment = try await Binary.databaseEnvironment()
        environment["RECEIPTGATE_APPLE_ROOT_CERTS"] = root.path
        environment["RECEIPTGATE_LOG_LEVEL"] = "warning"
        let created = try Binary.json(
            try await Binary.run(
                [
                    "client", "create", "--name", "g", "--bundle-id", "com.example.game",
                    "--environments", "sandbox",
                ], environment
            ).stdout)
        return Fixture(
            pki: pki, environment: environment, clientID: try #require(created["client_id"] as? String),
            secret: try #require(created["client_secret"] as? String),
            pool: PostgresPool(.init(connectionString: try #require(environment["DATABASE_URL"]), size: 1)))
    }

    static func serve(_ environment: [String: String]) async throws -> (ChildProcess, Int) {
        var variables = environment
        variables["RECEIPTGATE_PORT"] = "0"
        variables["RECEIPTGATE_LOG_LEVEL"] = "info"
        let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(variables))
        let line = try await server.waitForStderrLine(containing: "\"listening\"")
        let port = try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? ""))
        try await waitUntilTheCacheListens(port: port)
        return (server, port)
    }

    /// The HTTP listener can be up before the cache's LISTEN connection is; until then nothing is
    /// cached, and a test of what the cache does would pass without covering it.
    static func waitUntilTheCacheListens(port: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let metrics = try await RawHTTP.request(port: port, path: "/metrics").text
            if metrics.split(separator: "\n").contains("receiptgate_client_cache_listening 1") { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the client cache on port \(port) never started listening")
    }

    /// `receiptgate_client_cache_changes_heard_total` of the process on `port`.
    static func changesHeard(port: Int) async throws -> Int {
        let metrics = try await RawHTTP.request(port: port, path: "/metrics").text
        let line = metrics.split(separator: "\n").first {
            $0.hasPrefix("receiptgate_client_cache_changes_heard_total ")
        }
        return try #require(line.flatMap { Int($0.split(separator: " ").last ?? "") })
    }

    static func receipt(_ pki: AppleTestPKI, _ id: Int) throws -> [String: Any] {
        [
            "store": "app_store",
            "receipt": try pki.sign(AppleTestPKI.transaction(["transactionId": "\(2_000_000_000_100_000 + id)"])),
        ]
    }

    /// The notification that tells other processes is switched off, so only the version check
    /// in the verification's own statement can refuse: it must, the first time.
    @Test func aSecretRotatedByAnotherProcessIsRefusedAtOnceEvenWithoutTheNotification() async throws {
        let fixture = try await Self.fixture("cache-rotate")
        defer { fixture.pool.shutdown() }
        // Cached for the whole test however slow the machine: a lifetime that ran out would have the
        // old secret refused by a fresh lookup instead, and the version check would go untested.
        var environment = fixture.environment
        environment["RECEIPTGATE_CLIENT_CACHE_SECONDS"] = "300"
        let (server, port) = try await Self.serve(environment)
        defer { server.send(SIGTERM) }
        let old = SignedClient(port: port, clientID: fixture.clientID, secret: fixture.secret)
        #expect(try await old.post("/v1/verify", json: Self.receipt(fixture.pki, 1)).status == 200)  // cached now

        try await fixture.pool.execute("ALTER TABLE clients DISABLE TRIGGER clients_changed")
        let rotated = try Binary.json(
            try await Binary.run(["client", "rotate-secret", fixture.clientID], fixture.environment).stdout)
        let newSecret = try #require(rotated["client_secret"] as? String)
        let refused = try await old.post("/v1/verify", json: Self.receipt(fixture.pki, 2))
        #expect(refused.status == 401, "\(refused.text)")
        // Caught by the batch statement's own version check, not by a lookup before it.
        let afterRotation = try await GroupCommitCounts.read(port: port)
        #expect(afterRotation == GroupCommitCounts(settled: 1, stale: 1), "\(afterRotation)")
        #expect(
            try await fixture.pool.query("SELECT count(*) AS n FROM transactions")[0].decode("n", as: Int.self) == 1)
        let fresh = SignedClient(port: port, clientID: fixture.clientID, secret: newSecret)
        #expect(try await fresh.post("/v1/verify", json: Self.receipt(fixture.pki, 3)).status == 200)

        // Disabled, again with no notification: refused at once too.
        _ = try await Binary.run(["client", "disable", fixture.clientID], fixture.environment)
        #expect(try await fresh.post("/v1/verify", json: Self.receipt(fixture.pki, 4)).status == 401)
        let afterDisabling = try await GroupCommitCounts.read(port: port)
        #expect(afterDisabling == GroupCommitCounts(settled: 2, stale: 2), "\(afterDisabling)")
        try await fixture.pool.execute("ALTER TABLE clients ENABLE TRIGGER clients_changed")
    }

    /// With the notification on, even a read (which checks no version) is refused by the other
    /// process as soon as the notification of the rotation reached it. Entries live far longer
    /// than the test, so only the notification can be what refuses.
    @Test func aRotationReachesAnotherProcessByNotification() async throws {
        let fixture = try await Self.fixture("cache-notify")
        defer { fixture.pool.shutdown() }
        var environment = fixture.environment
        environment["RECEIPTGATE_CLIENT_CACHE_SECONDS"] = "300"
        let (first, firstPort) = try await Self.serve(environment)
        let (second, secondPort) = try await Self.serve(environment)
        defer { first.send(SIGTERM); second.send(SIGTERM) }
        let old = SignedClient(port: secondPort, clientID: fixture.clientID, secret: fixture.secret)
        #expect(
            try await SignedClient(port: firstPort, clientID: fixture.clientID, secret: fixture.secret)
                .post("/v1/verify", json: Self.receipt(fixture.pki, 10)).status == 200)
        #expect(try await old.get("/v1/transactions/app_store/2000000000100010").status == 200)  // cached in the second

        let heardBefore = try await Self.changesHeard(port: secondPort)
        _ = try await Binary.run(["client", "rotate-secret", fixture.clientID], fixture.environment)
        #expect(
            await eventually { (try? await Self.changesHeard(port: secondPort)) ?? heardBefore > heardBefore },
            "the second process never heard of the rotation")
        #expect(try await old.get("/v1/transactions/app_store/2000000000100010").status == 401)
        #expect(try await old.post("/v1/verify", json: Self.receipt(fixture.pki, 11)).status == 401)
    }

    /// Exactly once through the group-commit path (no webhook or other effect keeps a request off it):
    /// 150 requests for one purchase mixed with 150 distinct ones, over three processes.
    @Test func groupCommitRecordsEachPurchaseOnceAcrossThreeProcesses() async throws {
        let fixture = try await Self.fixture("cache-batch")
        defer { fixture.pool.shutdown() }
        var servers: [(ChildProcess, Int)] = []
        // 300 verifications at once to three debug builds beside the rest of the suite can outlast
        // the default 30 s deadline; this test is about exactly once, so the deadline is long.
        var environment = fixture.environment
        environment["RECEIPTGATE_REQUEST_TIMEOUT_SECONDS"] = "300"
        for _ in 0..<3 { servers.append(try await Self.serve(environment)) }
        defer { servers.forEach { $0.0.send(SIGTERM) } }
        let same = try JSONSerialization.data(withJSONObject: Self.receipt(fixture.pki, 500))
        var distinct: [Data] = []
        for index in 0..<150 {
            distinct.append(try JSONSerialization.data(withJSONObject: Self.receipt(fixture.pki, 1000 + index)))
        }
        let (clientID, secret) = (fixture.clientID, fixture.secret)
        let results = try await withThrowingTaskGroup(of: (Bool, Int, Bool?, Int?, String?).self) { group in
            for index in 0..<300 {
                let port = servers[index % 3].1
                let shared = index % 2 == 0
                let body = shared ? same : distinct[index / 2]
                group.addTask {
                    let response = try await SignedClient(port: port, clientID: clientID, secret: secret).post(
                        "/v1/verify", body: body)
                    let json = try? response.json()
                    return (
                        shared, response.status, json?["duplicate"] as? Bool,
                        (json?["transaction"] as? [String: Any])?["id"] as? Int,
                        json?["error"] as? String
                    )
                }
            }
            return try await group.reduce(into: [(Bool, Int, Bool?, Int?, String?)]()) { $0.append($1) }
        }
        #expect(results.allSatisfy { $0.1 == 200 }, "statuses: \(Set(results.map { "\($0.1) \($0.4 ?? "")" }))")
        let shared = results.filter(\.0)
        #expect(shared.filter { $0.2 == false }.count == 1)
        #expect(Set(shared.compactMap(\.3)).count == 1, "every answer for the shared purchase names the same record")
        #expect(results.filter { !$0.0 }.allSatisfy { $0.2 == false })
        #expect(
            try await fixture.pool.query("SELECT count(*) AS n FROM transactions")[0].decode("n", as: Int.self) == 151)
        #expect(
            try await fixture.pool.query("SELECT count(*) AS n FROM verification_attempts WHERE outcome = 'verified'")[
                0
            ]
            .decode("n", as: Int.self) == 300)
        let served = try await GroupCommitCounts.read(ports: servers.map(\.1))
        #expect(
            served == GroupCommitCounts(settled: 300, stale: 0), "the group-commit batchers answered \(served) of 300")
    }
}
