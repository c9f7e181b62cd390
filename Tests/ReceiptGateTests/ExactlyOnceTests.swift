import Crypto
import Foundation
import Postgres
import Testing
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
        let created = try await Binary.run(["client", "create", "--name", "g", "--bundle-id", "com.example.game", "--environments", "sandbox"], environment)
        let object = try Binary.json(created.stdout)
        let clientID = try #require(object["client_id"] as? String), secret = try #require(object["client_secret"] as? String)

        var servers: [(ChildProcess, Int)] = []
        for _ in 0..<3 {
            var variables = environment
            variables["RECEIPTGATE_PORT"] = "0"
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
        #expect(results.allSatisfy { $0.0 == 200 }, "statuses: \(Set(results.map(\.0)))")
        #expect(results.filter { $0.1 == false }.count == 1)
        #expect(results.filter { $0.1 == true }.count == 199)
        #expect(Set(results.compactMap(\.2)).count == 1, "every answer names the same record")

        let pool = PostgresPool(.init(connectionString: environment["DATABASE_URL"]!, size: 1))
        defer { pool.shutdown() }
        #expect(try await pool.query("SELECT count(*) AS n FROM transactions")[0].decode("n", as: Int.self) == 1)
        #expect(try await pool.query("SELECT count(*) AS n FROM verification_attempts WHERE outcome = 'verified'")[0].decode("n", as: Int.self) == 200)
        // All three processes really served requests.
        for (server, _) in servers {
            server.send(SIGTERM)
            #expect(try await server.wait(timeout: .seconds(30)) == 0)
            #expect(server.stderr.contains("\"http.route\":\"/v1/verify\""))
        }
    }
}
