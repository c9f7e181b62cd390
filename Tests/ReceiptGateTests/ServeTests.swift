import AccountLink
import AppStore
import AppStoreTestSupport
import Foundation
import GooglePlay
import Plugins
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// `receiptgate serve` as a user runs it, over real sockets.
private func startServer(_ environment: [String: String]) async throws -> (ChildProcess, Int) {
    var variables = environment
    variables["RECEIPTGATE_PORT"] = "0"
    let child = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(variables))
    let line = try await child.waitForStderrLine(containing: "\"listening\"")
    let object = try Binary.json(line)
    let url = try #require(object["url"] as? String)
    let port = try #require(Int(url.split(separator: ":").last ?? ""))
    return (child, port)
}

/// `/readyz` asked as an orchestrator asks it: again until it answers ready, for up to 20 s (its
/// database ping is bounded by 3 s, which a machine busy with the other suites can miss once).
func readiness(port: Int) async throws -> RawHTTP.Response {
    var answer = try await RawHTTP.request(port: port, path: "/readyz")
    var asked = 1
    while answer.status != 200, asked < 40 {
        asked += 1
        try await Task.sleep(for: .milliseconds(500))
        answer = try await RawHTTP.request(port: port, path: "/readyz")
    }
    return answer
}

@Suite struct Serving {
    @Test func operationalEndpointsAnswer() async throws {
        let (server, port) = try await startServer(try await Binary.databaseEnvironment())
        let health = try await RawHTTP.request(port: port, path: "/healthz", headers: ["X-Request-Id": "probe-1"])
        #expect(health.status == 200)
        #expect(try health.json()["status"] as? String == "ok")
        #expect(health.headers["x-request-id"] == "probe-1")

        let ready = try await readiness(port: port)
        #expect(ready.status == 200)
        #expect(try ready.json()["database"] as? String == "reachable")

        _ = try await RawHTTP.request(port: port, path: "/no-such-thing")
        let metrics = try await RawHTTP.request(port: port, path: "/metrics")
        #expect(metrics.status == 200)
        #expect(
            metrics.text.contains(#"receiptgate_http_requests_total{method="GET",route="/healthz",status="200"} 1"#))
        #expect(metrics.text.contains(#"route="unmatched",status="404"} 1"#))
        #expect(metrics.text.contains("receiptgate_http_request_duration_seconds_bucket"))
        #expect(metrics.text.contains(#"receiptgate_db_pool_connections{state="idle"}"#))

        // The service allocates through jemalloc (linked, not preloaded): the throughput figures in
        // the README depend on it, and a linker that drops an unreferenced library would lose it silently.
        // Read to the end: /proc reports a size of 0, and a sized read stops after the first page.
        let mapsFile = try #require(FileHandle(forReadingAtPath: "/proc/\(server.pid)/maps"))
        let maps = String(decoding: mapsFile.readDataToEndOfFile(), as: UTF8.self)
        mapsFile.closeFile()
        #expect(maps.contains("libjemalloc.so"), "receiptgate serve runs without jemalloc")

        let document = try await RawHTTP.request(port: port, path: "/openapi.yaml")
        #expect(document.status == 200)
        #expect(document.text.hasPrefix("openapi: 3"))

        server.send(SIGTERM)
        #expect(try await server.wait(timeout: .seconds(30)) == 0)
        // One JSON object per line, an access-log line per request with its route, status and duration.
        let lines = server.stderr.split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines { #expect((try? Binary.json(String(line))) != nil, "not JSON: \(line)") }
        let access = lines.compactMap { try? Binary.json(String($0)) }.filter { $0["message"] as? String == "request" }
        // The probe above may have asked /readyz more than once while the fresh pool connected.
        let readinessAsked = access.filter { $0["http.route"] as? String == "/readyz" }.count
        #expect(readinessAsked >= 1)
        #expect(access.count - readinessAsked == 4, "healthz, the unmatched path, metrics and openapi.yaml")
        let probe = try #require(access.first { $0["request.id"] as? String == "probe-1" })
        #expect(probe["http.route"] as? String == "/healthz")
        #expect(probe["http.status"] as? String == "200")
        #expect(probe["http.method"] as? String == "GET")
        #expect(probe["duration_ms"] != nil)
        #expect(server.stderr.contains("\"stopped\""))
    }

    @Test func readinessFollowsTheDatabase() async throws {
        let cluster = try await TestDatabase.makePrivateCluster()
        var environment = try await Binary.databaseEnvironment()
        environment["DATABASE_URL"] = try cluster.connectionString
        let (server, port) = try await startServer(environment)
        #expect(try await readiness(port: port).status == 200)
        try await onOwnThread { try cluster.stop() }
        let down = try await RawHTTP.request(port: port, path: "/readyz")
        #expect(down.status == 503)
        #expect(try down.json()["database"] as? String == "unreachable")
        #expect(
            try await RawHTTP.request(port: port, path: "/healthz").status == 200,
            "liveness does not depend on the database")
        _ = try await onOwnThread { try cluster.start() }
        #expect(try await readiness(port: port).status == 200)
        server.send(SIGINT)
        #expect(try await server.wait(timeout: .seconds(30)) == 0)
    }

    /// Deploy/openapi.yaml lists exactly the routes the service has: compared with the running
    /// service's own route table, so a route added without documentation fails here.
    @Test func openAPIDocumentDescribesEveryRoute() async throws {
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = try await TestDatabase.makeDatabase(prefix: "openapi")
        configuration.masterKey = Data(repeating: 9, count: 32)
        configuration.dataDirectory = TestDatabase.temporaryDirectory("openapi")
        configuration.adminToken = String(repeating: "t", count: 24)
        let logger = Logger(minimumLevel: .error)
        let service = try Service(
            configuration: configuration, logger: logger, database: try Database.open(configuration, logger: logger),
            stores: try Plugins.all.stores.map { try $0.start(PluginEnvironment(variables: [:])) },
            dialects: try Plugins.all.dialects.map { try $0.start(PluginEnvironment(variables: [:])) })
        defer { Task.detached { await service.shutdown() } }
        try await service.start()
        let document = try await RawHTTP.request(port: service.port, path: "/openapi.yaml").text
        var documented = Set<String>()
        var currentPath: String?
        for line in document.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                currentPath = String(line.dropFirst(2).dropLast())
            } else if !line.hasPrefix("  ") {
                currentPath = nil
            }
            if let currentPath,
                let method = ["get", "post", "put", "delete", "patch"].first(where: { line == "    \($0):" })
            {
                documented.insert("\(method.uppercased()) \(currentPath)")
            }
        }
        // The console's pages are HTML for a browser (docs/console.md), not part of the API it documents.
        let served = Set(
            service.routeTable.filter { !$0.pattern.hasPrefix("/console") }.map { "\($0.method) \($0.pattern)" })
        #expect(!served.isEmpty)
        #expect(
            service.routeTable.contains { $0.method == "GET" && $0.pattern == "/console" },
            "an admin token serves the console")
        #expect(documented == served)
        // Every documented unauthenticated GET answers 200 (readiness once the fresh pool has connected).
        for route in documented
        where route.hasPrefix("GET ") && !route.contains("{") && !route.contains("/admin/") && !route.contains("/v1/")
            && route != "GET /userinfo"
        {  // needs a bearer access token
            let path = String(route.dropFirst(4))
            let response =
                path == "/readyz"
                ? try await readiness(port: service.port) : try await RawHTTP.request(port: service.port, path: path)
            #expect(response.status == 200, "\(route) answered \(response.status)")
        }
        await service.shutdown()
    }
}

@Suite struct SharedEmbeddedCluster {
    /// Two processes on one data folder: the first to stop leaves the cluster to the other; the
    /// last one out stops it.
    @Test func theLastProcessOutStopsTheEmbeddedCluster() async throws {
        let data = TestDatabase.temporaryDirectory("shared-embedded").appendingPathComponent("data")
        let environment = ["RECEIPTGATE_DATA_DIR": data.path, "RECEIPTGATE_PORT": "0"]
        func launch() async throws -> (ChildProcess, Int) {
            let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(environment))
            let line = try await server.waitForStderrLine(containing: "\"listening\"")
            return (
                server, try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? ""))
            )
        }
        let (first, _) = try await launch()
        let (second, secondPort) = try await launch()
        #expect(try await readiness(port: secondPort).status == 200)

        first.send(SIGTERM)
        #expect(try await first.wait(timeout: .seconds(30)) == 0)
        #expect(first.stderr.contains("leaving embedded PostgreSQL running"))
        #expect(try await readiness(port: secondPort).status == 200, "the other process lost its database")

        second.send(SIGTERM)
        #expect(try await second.wait(timeout: .seconds(30)) == 0)
        #expect(second.stderr.contains("stopping embedded PostgreSQL"))
        let cluster = EmbeddedCluster(directory: data.appendingPathComponent("postgres"))
        #expect(try await onOwnThread { try !cluster.isRunning })
    }
}
