import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import Postgres
import TestSupport
import Testing

/// The ledger's central promise, checked the hard way: 200 simultaneous verifications of the
/// same purchase, spread over three `receiptgate serve` processes sharing one database. Both
/// record paths keep it: the group commit that plain verifications take, and the ordinary
/// transaction that a verification with effects (here a webhook) takes.
@Suite struct ExactlyOnce {
    /// Three processes serving one client of a fresh database (its events sent to `webhook`, when given).
    struct Processes {
        let servers: [(process: ChildProcess, port: Int)]
        let clientID: String
        let secret: String
        let pool: PostgresPool
    }

    static func start(_ pki: AppleTestPKI, name: String, webhook: WebhookReceiver?) async throws -> Processes {
        let root = TestDatabase.temporaryDirectory(name).appendingPathComponent("root.der")
        try pki.root.derEncoded.write(to: root)
        var environment = try await Binary.databaseEnvironment()
        environment["RECEIPTGATE_APPLE_ROOT_CERTS"] = root.path
        environment["RECEIPTGATE_LOG_LEVEL"] = "warning"
        var create = [
            "client", "create", "--name", "g", "--bundle-id", "com.example.game", "--environments", "sandbox",
        ]
        if let webhook { create += ["--webhook-url", webhook.url, "--allow-insecure-url"] }
        let object = try Binary.json(try await Binary.run(create, environment).stdout)
        let clientID = try #require(object["client_id"] as? String),
            secret = try #require(object["client_secret"] as? String)
        webhook?.secret.set(secret)

        var servers: [(process: ChildProcess, port: Int)] = []
        for _ in 0..<3 {
            var variables = environment
            variables["RECEIPTGATE_PORT"] = "0"
            variables["RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE"] = "on"  // the webhook receiver is on loopback
            variables["RECEIPTGATE_LOG_LEVEL"] = "info"
            let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(variables))
            let line = try await server.waitForStderrLine(containing: "\"listening\"")
            let port = try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? ""))
            servers.append((server, port))
        }
        return Processes(
            servers: servers, clientID: clientID, secret: secret,
            pool: PostgresPool(.init(connectionString: try #require(environment["DATABASE_URL"]), size: 1)))
    }

    /// The same purchase 200 times at once, a third to each process: one answer records it, the
    /// other 199 are duplicates naming the same record, and the ledger holds one row.
    static func verifyConcurrently(_ processes: Processes, _ pki: AppleTestPKI) async throws {
        let token = try pki.sign(AppleTestPKI.transaction())
        let body = try JSONSerialization.data(withJSONObject: ["store": "app_store", "receipt": token])
        let (clientID, secret) = (processes.clientID, processes.secret)
        let results = try await withThrowingTaskGroup(of: (Int, Bool?, Int?).self) { group in
            for index in 0..<200 {
                let port = processes.servers[index % 3].port
                group.addTask {
                    let response = try await SignedClient(port: port, clientID: clientID, secret: secret).post(
                        "/v1/verify", body: body)
                    let json = try? response.json()
                    return (
                        response.status, json?["duplicate"] as? Bool,
                        (json?["transaction"] as? [String: Any])?["id"] as? Int
                    )
                }
            }
            return try await group.reduce(into: [(Int, Bool?, Int?)]()) { $0.append($1) }
        }
        #expect(results.count == 200)
        #expect(
            results.allSatisfy { $0.0 == 200 },
            "statuses: \(Set(results.map(\.0))) \(processes.servers.map { $0.process.stderr.split(separator: "\n").filter { $0.contains("\"error\"") }.prefix(3) })"
        )
        #expect(results.filter { $0.1 == false }.count == 1)
        #expect(results.filter { $0.1 == true }.count == 199)
        #expect(Set(results.compactMap(\.2)).count == 1, "every answer names the same record")
        #expect(
            try await processes.pool.query("SELECT count(*) AS n FROM transactions")[0].decode("n", as: Int.self) == 1)
        #expect(
            try await processes.pool.query(
                "SELECT count(*) AS n FROM verification_attempts WHERE outcome = 'verified'")[0]
                .decode("n", as: Int.self) == 200)
    }

    /// All three processes served requests, then stop cleanly.
    static func stop(_ processes: Processes) async throws {
        processes.pool.shutdown()
        for (server, _) in processes.servers {
            server.send(SIGTERM)
            #expect(try await server.wait(timeout: .seconds(30)) == 0)
            #expect(server.stderr.contains("\"http.route\":\"/v1/verify\""))
        }
    }

    /// No webhook, so each verification is plain: the batchers answer every one of them (the
    /// first recorded, the rest settled as seen before) and nothing falls back to the ordinary path.
    @Test func twoHundredConcurrentRequestsOverThreeProcessesRecordOneTransactionThroughGroupCommit() async throws {
        let pki = try AppleTestPKI()
        let processes = try await Self.start(pki, name: "exactly-once-batch", webhook: nil)
        try await Self.verifyConcurrently(processes, pki)
        let served = try await GroupCommitCounts.read(ports: processes.servers.map(\.port))
        #expect(
            served == GroupCommitCounts(settled: 200, stale: 0), "the group-commit batchers answered \(served) of 200")
        try await Self.stop(processes)
    }

    /// With a webhook the first verification's event commits in its batch, through the group
    /// commit like the rest; three outbox workers then deliver the one event once, not once per process.
    @Test func twoHundredConcurrentRequestsWithAWebhookRecordOneTransactionAndDeliverOneEvent() async throws {
        let pki = try AppleTestPKI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let processes = try await Self.start(pki, name: "exactly-once-webhook", webhook: receiver)
        try await Self.verifyConcurrently(processes, pki)
        let served = try await GroupCommitCounts.read(ports: processes.servers.map(\.port))
        #expect(
            served == GroupCommitCounts(settled: 200, stale: 0), "the group-commit batchers answered \(served) of 200")
        try await OutboxDrain.wait(processes.pool)
        #expect(receiver.acknowledged.count == 1)
        #expect(receiver.acknowledged.first?.type == "transaction.verified")
        #expect(receiver.acknowledged.first?.signatureValid == true)
        await receiver.server.shutdown()
        try await Self.stop(processes)
    }

    /// A subscription Apple tells of (SUBSCRIBED, to the first process) while, or before, 200 claims
    /// of it race over the three: the notification writes or updates the row but claims nothing, so
    /// exactly one claim is the first verification, with one `transaction.verified` event.
    @Test(arguments: [false, true])
    func twoHundredClaimsOfAPurchaseAppleToldUsOfOverThreeProcessesHaveOneFirst(notificationFirst: Bool) async throws {
        let pki = try AppleTestPKI()
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let processes = try await Self.start(pki, name: "exactly-once-told", webhook: receiver)
        let fields = ClaimSupport.subscription("2000000000008201")
        let notified = processes.servers[0].port
        let notify: @Sendable () async throws -> Int = {
            let body = try Self.subscribedNotification(pki, fields)
            return try await RawHTTP.request(
                port: notified, method: "POST", path: "/v1/notifications/app-store", body: body
            ).status
        }
        if notificationFirst { #expect(try await notify() == 200) }
        let results = try await Self.claimConcurrently(
            processes, receipt: try pki.sign(AppleTestPKI.transaction(fields)),
            alongside: notificationFirst ? nil : notify)
        #expect(results.count == 200)
        #expect(
            results.allSatisfy { $0.status == 200 },
            "statuses: \(Set(results.map(\.status))) \(processes.servers.map { $0.process.stderr.split(separator: "\n").filter { $0.contains("\"error\"") }.prefix(3) })"
        )
        #expect(results.filter { $0.duplicate == false }.count == 1)
        #expect(results.filter { $0.duplicate == true }.count == 199)
        #expect(Set(results.compactMap(\.id)).count == 1, "every answer names the same record")
        #expect(
            try await processes.pool.query("SELECT count(*) AS n FROM transactions")[0].decode("n", as: Int.self) == 1)
        #expect(
            try await processes.pool.query(
                "SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.verified'")[0]
                .decode("n", as: Int.self) == 1)
        try await OutboxDrain.wait(processes.pool)
        #expect(receiver.acknowledged.filter { $0.type == "transaction.verified" }.count == 1)
        await receiver.server.shutdown()
        try await Self.stop(processes)
    }

    /// Apple's SUBSCRIBED (INITIAL_BUY) notification of the subscription period `fields`.
    static func subscribedNotification(_ pki: AppleTestPKI, _ fields: [String: any Sendable]) throws -> Data {
        let now = ClaimSupport.now()
        let data: [String: any Sendable] = [
            "environment": "Sandbox", "bundleId": "com.example.game",
            "signedTransactionInfo": try pki.sign(AppleTestPKI.transaction(fields)),
            "signedRenewalInfo": try pki.sign([
                "environment": "Sandbox", "originalTransactionId": fields["originalTransactionId"] ?? "",
                "autoRenewStatus": 1, "signedDate": now,
            ]),
        ]
        let payload: [String: any Sendable] = [
            "notificationType": "SUBSCRIBED", "subtype": "INITIAL_BUY",
            "notificationUUID": UUID().uuidString.lowercased(),
            "version": "2.0", "signedDate": now, "data": data,
        ]
        return Data(#"{"signedPayload":"\#(try pki.sign(payload))"}"#.utf8)
    }

    /// `receipt` claimed 200 times at once, a third to each process, with `alongside` (whose
    /// answer must be 200) racing them: each claim's status, `duplicate` and record id.
    static func claimConcurrently(
        _ processes: Processes, receipt: String,
        alongside: (@Sendable () async throws -> Int)?
    ) async throws -> [(status: Int, duplicate: Bool?, id: Int?)] {
        let body = try JSONSerialization.data(withJSONObject: ["store": "app_store", "receipt": receipt])
        let (clientID, secret) = (processes.clientID, processes.secret)
        return try await withThrowingTaskGroup(of: (status: Int, duplicate: Bool?, id: Int?)?.self) { group in
            if let alongside {
                group.addTask {
                    let status = try await alongside()
                    #expect(status == 200, "the notification racing the claims")
                    return nil
                }
            }
            for index in 0..<200 {
                let port = processes.servers[index % 3].port
                group.addTask {
                    let response = try await SignedClient(port: port, clientID: clientID, secret: secret).post(
                        "/v1/verify", body: body)
                    let json = try? response.json()
                    return (
                        response.status, json?["duplicate"] as? Bool,
                        (json?["transaction"] as? [String: Any])?["id"] as? Int
                    )
                }
            }
            return try await group.reduce(into: []) { all, result in if let result { all.append(result) } }
        }
    }

    /// A 200 is sent only after the commit: killing the server the instant it answered loses nothing.
    /// One client of a fresh database, and `receiptgate serve` processes started on it.
    struct KillNineFixture {
        let environment: [String: String]
        let clientID: String, secret: String
        let pki: AppleTestPKI

        init() async throws {
            pki = try AppleTestPKI()
            let root = TestDatabase.temporaryDirectory("kill9").appendingPathComponent("root.der")
            try pki.root.derEncoded.write(to: root)
            var environment = try await Binary.databaseEnvironment()
            environment["RECEIPTGATE_APPLE_ROOT_CERTS"] = root.path
            self.environment = environment
            let created = try Binary.json(
                try await Binary.run(
                    [
                        "client", "create", "--name", "g", "--bundle-id", "com.example.game",
                        "--environments", "sandbox",
                    ], environment
                ).stdout)
            clientID = try #require(created["client_id"] as? String)
            secret = try #require(created["client_secret"] as? String)
        }

        func start() async throws -> (ChildProcess, Int) {
            var variables = environment
            variables["RECEIPTGATE_PORT"] = "0"
            let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(variables))
            let line = try await server.waitForStderrLine(containing: "\"listening\"")
            return (
                server, try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? ""))
            )
        }

        func client(_ port: Int) -> SignedClient { SignedClient(port: port, clientID: clientID, secret: secret) }

        func verification(_ transactionID: String) throws -> [String: Any] {
            ["store": "app_store", "receipt": try pki.sign(AppleTestPKI.transaction(["transactionId": transactionID]))]
        }
    }

    @Test func anAcknowledgedVerificationSurvivesKillNine() async throws {
        let fixture = try await KillNineFixture()
        let (first, port) = try await fixture.start()
        let answer = try await fixture.client(port).post(
            "/v1/verify", json: try fixture.verification("2000000000008001"))
        #expect(answer.status == 200)
        first.send(SIGKILL)
        _ = try await first.wait(timeout: .seconds(10))

        let (second, newPort) = try await fixture.start()
        let found = try await fixture.client(newPort).get("/v1/transactions/app_store/2000000000008001")
        #expect(found.status == 200)
        #expect(
            (try found.json()["transaction"] as? [String: Any])?["id"] as? Int
                == (try answer.json()["transaction"] as? [String: Any])?["id"] as? Int)
        second.send(SIGTERM)
        _ = try await second.wait(timeout: .seconds(30))
    }

    /// The other half of the promise: no success is answered before the commit. A lock the
    /// ledger's insert must wait for is held (another session's `LOCK TABLE`) while the
    /// verification arrives; once its insert is seen waiting for it, no answer has come, and
    /// killing the process then leaves no row and no success.
    @Test func noSuccessIsAnsweredBeforeTheCommit() async throws {
        let fixture = try await KillNineFixture()
        let (server, port) = try await fixture.start()
        let databaseURL = try #require(fixture.environment["DATABASE_URL"])
        let locker = try ChildProcess.launch(
            "/usr/bin/psql",
            [
                databaseURL, "-v", "ON_ERROR_STOP=1", "-c",
                "BEGIN; LOCK TABLE transactions IN SHARE MODE; SELECT pg_sleep(600);",
            ],
            environment: ["PATH": "/usr/bin:/bin"])
        defer { locker.send(SIGKILL) }
        let pool = PostgresPool(.init(connectionString: databaseURL, size: 1))
        defer { pool.shutdown() }
        func count(_ sql: String) async throws -> Int {
            try await pool.query(PostgresQuery(unsafeSQL: sql))[0].decode("n", as: Int.self)
        }
        let lockHeld =
            "SELECT count(*) AS n FROM pg_locks WHERE relation = 'transactions'::regclass AND mode = 'ShareLock' AND granted"
        let insertWaits = "SELECT count(*) AS n FROM pg_locks WHERE relation = 'transactions'::regclass AND NOT granted"
        _ = await eventually { (try? await count(lockHeld)) == 1 }
        #expect(try await count(lockHeld) == 1, "psql never took the lock: \(locker.stderr)")

        let answered = LockedBox<Int?>(nil)
        let request = Task { [client = fixture.client(port), body = try fixture.verification("2000000000008002")] in
            let status = (try? await client.post("/v1/verify", json: body).status) ?? -1
            answered.set(status)
        }
        _ = await eventually { (try? await count(insertWaits)) ?? 0 > 0 || answered.get() != nil }
        #expect(try await count(insertWaits) >= 1, "the verification never reached its insert")
        #expect(
            answered.get() == nil, "answered \(answered.get() ?? 0) while its insert was still waiting for the lock")

        server.send(SIGKILL)
        _ = try await server.wait(timeout: .seconds(10))
        await request.value
        #expect(answered.get() != 200, "a success was answered for a verification that was never committed")
        locker.send(SIGKILL)
        _ = try await locker.wait(timeout: .seconds(10))

        let (restarted, newPort) = try await fixture.start()
        #expect(try await fixture.client(newPort).get("/v1/transactions/app_store/2000000000008002").status == 404)
        #expect(try await count("SELECT count(*) AS n FROM transactions") == 0)
        restarted.send(SIGTERM)
        _ = try await restarted.wait(timeout: .seconds(30))
    }
}
