import AppStore
import AppStoreTestSupport
import Foundation
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// `RECEIPTGATE_ADMIN_ADDR` moves `/metrics` and `/admin` to a listener of their own.
@Suite struct AdminListener {
    @Test func metricsAndAdminLeaveThePublicListener() async throws {
        let token = String(repeating: "k", count: 32)
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = try await TestDatabase.makeDatabase(prefix: "admin")
        configuration.masterKey = Data(repeating: 3, count: 32)
        configuration.dataDirectory = TestDatabase.temporaryDirectory("admin")
        configuration.adminToken = token
        configuration.adminAddress = ListenAddress(host: "127.0.0.1", port: 0)
        let logger = Logger(minimumLevel: .error)
        let service = try Service(
            configuration: configuration, logger: logger, database: try Database.open(configuration, logger: logger),
            stores: [try AppStoreProvider.fromEnvironment([:]).registration])
        defer { Task.detached { await service.shutdown() } }
        try await service.start()
        let adminPort = try #require(service.adminPort)
        #expect(adminPort != service.port)

        #expect(try await RawHTTP.request(port: service.port, path: "/metrics").status == 404)
        #expect(
            try await RawHTTP.request(
                port: service.port, path: "/admin/webhooks", headers: ["Authorization": "Bearer \(token)"]
            ).status == 404)
        #expect(try await RawHTTP.request(port: service.port, path: "/healthz").status == 200)

        let metrics = try await RawHTTP.request(port: adminPort, path: "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("receiptgate_http_requests_total"))
        #expect(try await RawHTTP.request(port: adminPort, path: "/admin/webhooks").status == 401)
        #expect(
            try await RawHTTP.request(
                port: adminPort, path: "/admin/webhooks", headers: ["Authorization": "Bearer \(token)"]
            ).status == 200)
        #expect(
            try await RawHTTP.request(port: adminPort, method: "POST", path: "/v1/verify").status == 404,
            "the public API is not on it")
        await service.shutdown()
    }

    @Test func theAddressIsCheckedAtStart() throws {
        #expect(ListenAddress("127.0.0.1:9090") == ListenAddress(host: "127.0.0.1", port: 9090))
        #expect(ListenAddress("[::1]:9090") == ListenAddress(host: "::1", port: 9090))
        for bad in ["9090", "localhost:9090", "127.0.0.1:99999", "[::1]9090", "127.0.0.1:"] {
            #expect(ListenAddress(bad) == nil, "\(bad)")
        }
        #expect(throws: ServiceConfiguration.Invalid.self) {
            try ServiceConfiguration.fromEnvironment(["RECEIPTGATE_ADMIN_ADDR": "admin:1"])
        }
    }
}
