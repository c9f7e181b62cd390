import AlogameGateway
import AppStoreTestSupport
import Foundation
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// Real responses of the running service, checked against Deploy/openapi.yaml by an independent
/// OpenAPI validator (Python `openapi-schema-validator`, installed by scripts/test.sh).
@Suite struct OpenAPIConformance {
    static let python = ProcessInfo.processInfo.environment["RECEIPTGATE_ORACLE_PYTHON"]

    @Test(
        .enabled(
            if: python != nil || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to validate responses against the OpenAPI document"))
    func responsesMatchTheDocument() async throws {
        let python = try #require(Self.python, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        let token = String(repeating: "k", count: 32)
        let receiver = try WebhookReceiver()
        let harness = try await VerifyHarness.start(
            environments: [.sandbox], adminToken: token, webhookURL: receiver.url, dialects: [AlogameGateway()])
        defer { harness.stop() }
        var records: [[String: Any]] = []
        func record(_ path: String, _ method: String, _ response: RawHTTP.Response) throws {
            let body = try JSONSerialization.jsonObject(with: response.body)
            records.append(["path": path, "method": method, "status": response.status, "body": body])
        }

        let subscription: [String: any Sendable] = [
            "transactionId": "2000000000007001", "originalTransactionId": "2000000000007001",
            "type": "Auto-Renewable Subscription",
            "expiresDate": Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000,
        ]
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(subscription))
        try record(
            "/v1/verify", "post",
            try await harness.client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "p"]))
        try record(
            "/v1/verify", "post",
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]))
        try record("/v1/verify", "post", try await harness.client.post("/v1/verify", json: ["store": "app_store"]))
        try record(
            "/v1/verify", "post",
            try await harness.client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": "x"], secretOverride: "bad"))
        try record(
            "/v1/verify", "post",
            try await harness.client.post(
                "/v1/verify",
                json: [
                    "store": "app_store",
                    "receipt": try harness.pki.sign(
                        AppleTestPKI.transaction(["environment": "Production", "transactionId": "2000000000007002"])),
                ]))
        try record(
            "/v1/verify", "post",
            try await harness.client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": receipt, "product_id": "other"]))
        let rival = try await harness.service.clients.create(
            VerifyHarness.settings(name: "Rival", environments: [.sandbox], gameID: 7))
        try record(
            "/v1/verify", "post",
            try await SignedClient(port: harness.client.port, clientID: rival.client.clientID, secret: rival.secret)
                .post("/v1/verify", json: ["store": "app_store", "receipt": receipt]))
        try record(
            "/v1/transactions/{store}/{transaction_id}", "get",
            try await harness.client.get("/v1/transactions/app_store/2000000000007001"))
        try record(
            "/v1/transactions/{store}/{transaction_id}", "get",
            try await harness.client.get("/v1/transactions/app_store/none"))
        try record(
            "/v1/subscriptions/{store}/{original_transaction_id}", "get",
            try await harness.client.get("/v1/subscriptions/app_store/2000000000007001"))
        try record(
            "/v1/players/{player_id}/transactions", "get",
            try await harness.client.get("/v1/players/p/transactions?limit=1"))
        try record(
            "/v1/players/{player_id}/transactions", "get",
            try await harness.client.get("/v1/players/p/transactions?limit=x"))
        let consumption = "/v1/transactions/app_store/2000000000007001/consumption",
            consumptionRoute = "/v1/transactions/{store}/{transaction_id}/consumption"
        try record(
            consumptionRoute, "post",
            try await harness.client.post(
                consumption, json: ["delivered": true, "reported_at_ms": 1_700_000_060_000], version: "2"))
        let supersededReport = try await harness.client.post(
            consumption, json: ["delivered": false, "reported_at_ms": 1_700_000_000_000], version: "2")
        #expect(try supersededReport.json()["superseded"] as? Bool == true, "\(supersededReport.text)")
        try record(consumptionRoute, "post", supersededReport)
        try record(
            consumptionRoute, "post",
            try await harness.client.post(consumption, json: ["delivered": true], version: "1"))
        try record(
            consumptionRoute, "post",
            try await harness.client.post(consumption, json: ["delivered": true, "reported_at_ms": -1], version: "2"))
        try record(
            consumptionRoute, "post",
            try await harness.client.post(
                "/v1/transactions/app_store/none/consumption", json: ["delivered": true], version: "2"))
        // The catalog through the admin API, then what the player owns under it.
        let auth = ["Authorization": "Bearer \(token)"]
        let products = "/admin/clients/\(harness.client.clientID)/products"
        func admin(_ method: String, _ path: String, _ body: String? = nil) async throws -> RawHTTP.Response {
            try await RawHTTP.request(
                port: harness.client.port, method: method, path: path,
                headers: auth.merging(["Content-Type": "application/json"]) { a, _ in a },
                body: Data((body ?? "").utf8))
        }
        try record(
            "/admin/clients/{client_id}/products/{store}/{product_id}", "put",
            try await admin("PUT", "\(products)/app_store/gems.100", #"{"entitlements":["vip","supporter"]}"#))
        try record(
            "/admin/clients/{client_id}/products/{store}/{product_id}", "put",
            try await admin("PUT", "\(products)/app_store/noads", #"{"entitlements":["no_ads"]}"#))
        try record(
            "/admin/clients/{client_id}/products/{store}/{product_id}", "put",
            try await admin("PUT", "\(products)/app_store/gems.100", #"{"entitlements":["Not A Name"]}"#))
        try record(
            "/admin/clients/{client_id}/products/{store}/{product_id}", "put",
            try await admin(
                "PUT", "\(products)/nowhere/gems.100",
                #"{"entitlements":["vip"]}"#))
        try record(
            "/admin/clients/{client_id}/products/{store}/{product_id}", "put",
            try await admin(
                "PUT", "/admin/clients/no-such-client/products/app_store/gems.100", #"{"entitlements":["vip"]}"#))
        try record(
            "/admin/clients/{client_id}/products/{store}/{product_id}", "delete",
            try await admin("DELETE", "\(products)/app_store/noads"))
        try record(
            "/admin/clients/{client_id}/products/{store}/{product_id}", "delete",
            try await admin("DELETE", "\(products)/app_store/noads"))
        let listedProducts = try await admin("GET", products)
        #expect((try listedProducts.json()["products"] as? [[String: Any]])?.count == 1, "\(listedProducts.text)")
        try record("/admin/clients/{client_id}/products", "get", listedProducts)
        try record(
            "/admin/clients/{client_id}/products", "get",
            try await RawHTTP.request(port: harness.client.port, path: products))
        let owned = try await harness.client.get("/v1/players/p/entitlements")
        #expect((try owned.json()["entitlements"] as? [[String: Any]])?.count == 2, "vip and supporter: \(owned.text)")
        try record("/v1/players/{player_id}/entitlements", "get", owned)
        try record(
            "/v1/players/{player_id}/entitlements", "get",
            try await harness.client.get("/v1/players/nobody/entitlements"))
        try record(
            "/v1/players/{player_id}/entitlements", "get",
            try await harness.client.get("/v1/players/p/entitlements", version: "1"))
        try record(
            "/v1/players/{player_id}/entitlements", "get",
            try await harness.client.get("/v1/players/\(String(repeating: "x", count: 300))/entitlements"))
        try record(
            "/v1/notifications/app-store", "post",
            try await NotificationsDriveTheLedger.notify(harness, type: "DID_RENEW", transaction: subscription))
        try record(
            "/v1/notifications/app-store", "post",
            try await RawHTTP.request(
                port: harness.client.port, method: "POST",
                path: "/v1/notifications/app-store", body: Data("{}".utf8)))
        let gatewayReceipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000007101", "productId": "gems100"]))
        try record(
            "/iap/gateway/verify", "post",
            try await harness.client.post(
                "/iap/gateway/verify", json: ["receipt": gatewayReceipt, "product_id": "gems100", "os_id": 2]))
        try record(
            "/iap/gateway/verify", "post",
            try await harness.client.post(
                "/iap/gateway/verify",
                json: ["receipt": gatewayReceipt, "product_id": "gems100", "os_id": 2, "player_id": "x"]))
        try record(
            "/iap/gateway/verify", "post",
            try await harness.client.post("/iap/gateway/verify", json: ["receipt": gatewayReceipt, "os_id": 5]))
        try record(
            "/iap/gateway/verify", "post",
            try await harness.client.post(
                "/iap/gateway/verify", json: ["receipt": gatewayReceipt, "product_id": "x", "os_id": 2]))
        try record(
            "/iap/gateway/lookup-receipt", "post",
            try await harness.client.post("/iap/gateway/lookup-receipt", json: ["order_id": "MQ5VLT9VXT"]))
        try record(
            "/iap/gateway/lookup-receipt", "post",
            try await harness.client.post("/iap/gateway/lookup-receipt", json: ["order": 1]))
        try record("/healthz", "get", try await RawHTTP.request(port: harness.client.port, path: "/healthz"))
        try record("/readyz", "get", try await RawHTTP.request(port: harness.client.port, path: "/readyz"))
        let listed = try await RawHTTP.request(port: harness.client.port, path: "/admin/webhooks", headers: auth)
        try record("/admin/webhooks", "get", listed)
        let eventID = try #require((try listed.json()["events"] as? [[String: Any]])?.first?["event_id"] as? String)
        try record(
            "/admin/webhooks/{event_id}/redeliver", "post",
            try await RawHTTP.request(
                port: harness.client.port, method: "POST", path: "/admin/webhooks/\(eventID)/redeliver", headers: auth))
        try record(
            "/admin/webhooks/{event_id}/redeliver", "post",
            try await RawHTTP.request(
                port: harness.client.port, method: "POST", path: "/admin/webhooks/\(UUID())/redeliver", headers: auth))
        try record(
            "/admin/webhooks", "get", try await RawHTTP.request(port: harness.client.port, path: "/admin/webhooks"))
        let notifications = try await RawHTTP.request(
            port: harness.client.port, path: "/admin/notifications?type=DID_RENEW", headers: auth)
        #expect(
            (try notifications.json()["notifications"] as? [[String: Any]])?.count == 1,
            "the notification above is listed")
        try record("/admin/notifications", "get", notifications)
        try record(
            "/admin/notifications", "get",
            try await RawHTTP.request(port: harness.client.port, path: "/admin/notifications"))
        await harness.service.shutdown()
        await receiver.server.shutdown()

        let statuses = Set(records.compactMap { $0["status"] as? Int })
        #expect(statuses.isSuperset(of: [200, 400, 401, 404, 409, 412, 422]))
        try await OpenAPIConformance.validate(records, python: python, label: "conformance")
    }

    /// Runs the recorded responses through `Conformance/validate_responses.py` against
    /// the served OpenAPI document; every one must be documented and match its schema.
    static func validate(
        _ records: [[String: Any]], python: String, label: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let input = TestDatabase.temporaryDirectory(label).appendingPathComponent("responses.jsonl")
        try records.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }.joined(
            separator: "\n"
        )
        .write(to: input, atomically: true, encoding: .utf8)
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let spec = try AssembledOpenAPI.file(label)
        let result = try await ChildProcess.run(
            "/bin/sh",
            [
                "-c", "exec \"$0\" \"$1\" \"$2\" < \"$3\"", python,
                here.appendingPathComponent("Conformance/validate_responses.py").path, spec, input.path,
            ],
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr.suffix(2000))", sourceLocation: sourceLocation)
        #expect(
            result.stdout.contains("checked \(records.count) responses"), "\(result.stdout)",
            sourceLocation: sourceLocation)
    }
}
