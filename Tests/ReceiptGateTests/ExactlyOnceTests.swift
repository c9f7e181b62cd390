import Crypto
import Foundation
import Postgres
import Testing
import AppStoreTestSupport
import TestSupport

/// The ledger's central promise, checked the hard way: 200 simultaneous verifications of the
/// same purchase, spread over three `receiptgate serve` processes sharing one database.
@Suite struct ExactlyOnce {
    @Test func twoHundredConcurrentRequestsOverThreeProcessesRecordOneTransaction() async throws {
        let pki = try AppleTestPKI()
        let directory = TestDatabase.temporaryDirectory("exactly-once")
        let root = directory.appendingPathComponent("root.der")
        try pki.root.derEncoded.write(to: root)
        var environment = try await Binary.databaseEnvironment()
        environment["RECEIPTGATE_APPLE_ROOT_CERTS"] = root.path
        environment["RECEIPTGATE_LOG_LEVEL"] = "warning"
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let created = try await Binary.run(["client", "create", "--name", "g", "--bundle-id", "com.example.game", "--environments", "sandbox",
                                            "--webhook-url", receiver.url, "--allow-insecure-url"], environment)
        let object = try Binary.json(created.stdout)
        let clientID = try #require(object["client_id"] as? String), secret = try #require(object["client_secret"] as? String)
        receiver.secret.set(secret)

        var servers: [(ChildProcess, Int)] = []
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

        let token = try pki.sign(AppleTestPKI.transaction())
        let body = try JSONSerialization.data(withJSONObject: ["store": "app_store", "receipt": token])
        let results = try await withThrowingTaskGroup(of: (Int, Bool?, Int?).self) { group in
            for index in 0..<200 {
                let port = servers[index % 3].1
                group.addTask {
                    let response = try await SignedClient(port: port, clientID: clientID, secret: secret).post("/v1/verify", body: body)
                    let json = try? response.json()
                    return (response.status, json?["duplicate"] as? Bool, (json?["transaction"] as? [String: Any])?["id"] as? Int)
                }
            }
            return try await group.reduce(into: [(Int, Bool?, Int?)]()) { $0.append($1) }
        }
        #expect(results.count == 200)
        #expect(results.allSatisfy { $0.0 == 200 }, "statuses: \(Set(results.map(\.0))) \(servers.map { $0.0.stderr.split(separator: "\n").filter { $0.contains("\"error\"") }.prefix(3) })")
        #expect(results.filter { $0.1 == false }.count == 1)
        #expect(results.filter { $0.1 == true }.count == 199)
        #expect(Set(results.compactMap(\.2)).count == 1, "every answer names the same record")

        let pool = PostgresPool(.init(connectionString: environment["DATABASE_URL"]!, size: 1))
        defer { pool.shutdown() }
        #expect(try await pool.query("SELECT count(*) AS n FROM transactions")[0].decode("n", as: Int.self) == 1)
        #expect(try await pool.query("SELECT count(*) AS n FROM verification_attempts WHERE outcome = 'verified'")[0].decode("n", as: Int.self) == 200)
        // Three outbox workers, one event: delivered once, not once per process.
        for _ in 0..<100 where receiver.acknowledged.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .seconds(1))
        #expect(receiver.acknowledged.count == 1)
        #expect(receiver.acknowledged.first?.type == "transaction.verified")
        #expect(receiver.acknowledged.first?.signatureValid == true)
        await receiver.server.shutdown()

        // All three processes really served requests.
        for (server, _) in servers {
            server.send(SIGTERM)
            #expect(try await server.wait(timeout: .seconds(30)) == 0)
            #expect(server.stderr.contains("\"http.route\":\"/v1/verify\""))
        }
    }

    /// A 200 is sent only after the commit: killing the server the instant it answered loses nothing.
    @Test func anAcknowledgedVerificationSurvivesKillNine() async throws {
        let pki = try AppleTestPKI()
        let root = TestDatabase.temporaryDirectory("kill9").appendingPathComponent("root.der")
        try pki.root.derEncoded.write(to: root)
        var environment = try await Binary.databaseEnvironment()
        environment["RECEIPTGATE_APPLE_ROOT_CERTS"] = root.path
        let created = try Binary.json(try await Binary.run(["client", "create", "--name", "g", "--bundle-id", "com.example.game",
                                                            "--environments", "sandbox"], environment).stdout)
        let clientID = try #require(created["client_id"] as? String), secret = try #require(created["client_secret"] as? String)

        func start() async throws -> (ChildProcess, Int) {
            var variables = environment
            variables["RECEIPTGATE_PORT"] = "0"
            variables["RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE"] = "on"  // the webhook receiver is on loopback
            let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(variables))
            let line = try await server.waitForStderrLine(containing: "\"listening\"")
            return (server, try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? "")))
        }
        let (first, port) = try await start()
        let receipt = try pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000008001"]))
        let answer = try await SignedClient(port: port, clientID: clientID, secret: secret).post("/v1/verify", json: ["store": "app_store", "receipt": receipt])
        #expect(answer.status == 200)
        first.send(SIGKILL)
        _ = try await first.wait(timeout: .seconds(10))

        let (second, newPort) = try await start()
        let found = try await SignedClient(port: newPort, clientID: clientID, secret: secret).get("/v1/transactions/app_store/2000000000008001")
        #expect(found.status == 200)
        #expect((try found.json()["transaction"] as? [String: Any])?["id"] as? Int == (try answer.json()["transaction"] as? [String: Any])?["id"] as? Int)
        second.send(SIGTERM)
        _ = try await second.wait(timeout: .seconds(30))
    }
}
