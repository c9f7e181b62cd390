import AlogameGateway
import Postgres
@testable import ReceiptGate
import AppStore
import Crypto
import Foundation
import ReceiptCore
import Testing
import AppStoreTestSupport
import TestSupport

/// Seed 000's support tool, asking a local fake of the App Store Server API.
@Suite struct AlogameLookupReceipt {
    @Test func ordersAreReportedAgainstWhatTheGatewayReceived() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000009001", environment: "Production", ["productId": "gems100"])
        try fake.add("2000000000009002", environment: "Production", ["productId": "gems500"])
        let harness = try await VerifyHarness.start(environments: [.production], dialects: [AlogameGateway()], pki: fake.pki) { pki in
            var appStore = AppStoreConfiguration(trustRoots: [pki.root])
            appStore.serverAPIKey = .init(keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID, privateKey: fake.teamKey)
            appStore.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
            appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
            return appStore
        }
        defer { harness.stop() }
        let service = harness.service, client = harness.client

        // The gateway received one of the order's two transactions.
        let signed = try #require(fake.state.known.get()["Production"]?["2000000000009001"])
        #expect(try await client.post("/iap/gateway/verify", json: ["receipt": signed, "product_id": "gems100", "os_id": 2]).status == 200)

        let lookupBody = try JSONSerialization.data(withJSONObject: ["order_id": "MQ5VLT9VXT"])
        let stamp = Int(Date().timeIntervalSince1970)
        let lookup = try await client.post("/iap/gateway/lookup-receipt", body: lookupBody, timestamp: stamp)
        #expect(lookup.status == 200, "\(lookup.text)")
        // The identical signed request again (a retry) gets the same answer, not a replay refusal.
        let retried = try await client.post("/iap/gateway/lookup-receipt", body: lookupBody, timestamp: stamp)
        #expect(retried.status == 200)
        #expect(retried.body == lookup.body)
        let json = try lookup.json()
        #expect(json["order_id"] as? String == "MQ5VLT9VXT")
        #expect(json["game_id"] as? Int == 42)
        #expect(json["found"] as? Bool == true)
        #expect(json["environment"] as? String == "Production")
        let transactions = try #require(json["transactions"] as? [[String: Any]])
        #expect(transactions.count == 2)
        let received = try #require(transactions.first { $0["transaction_id"] as? String == "2000000000009001" })
        let receivedGateway = try #require(received["gateway"] as? [String: Any])
        #expect(received["product_id"] as? String == "gems100")
        #expect(receivedGateway["found"] as? Bool == true)
        #expect(receivedGateway["tx_mgmt_id"] as? Int != nil)
        #expect(receivedGateway["current_state"] as? String == "gateway_verified")
        #expect(receivedGateway["recorded_for_this_game"] as? Bool == true)
        #expect(receivedGateway.keys.contains("last_error_code") && receivedGateway.keys.contains("last_error_message"))
        let missed = try #require(transactions.first { $0["transaction_id"] as? String == "2000000000009002" }?["gateway"] as? [String: Any])
        #expect(missed["found"] as? Bool == false)
        #expect(missed["reason"] as? String == "NEVER_RECEIVED_BY_GATEWAY")

        let unknown = try await client.post("/iap/gateway/lookup-receipt", json: ["order_id": "NOSUCHORDER"]).json()
        #expect(unknown["found"] as? Bool == false)
        #expect((unknown["transactions"] as? [Any])?.isEmpty == true)
        let broken = try await client.post("/iap/gateway/lookup-receipt", json: ["order_id": "BROKENDATA"]).json()
        #expect(((broken["transactions"] as? [[String: Any]])?.first?["gateway"] as? [String: Any])?["reason"] as? String == "DECODE_FAILED")
        #expect(try await client.post("/iap/gateway/lookup-receipt", json: [:]).status == 400)

        // Another game's client sees that the gateway has it, never its record.
        let rival = try await service.clients.create(VerifyHarness.settings(name: "Rival", environments: [.production], gameID: 7))
        let rivalView = try await SignedClient(port: service.port, clientID: rival.client.clientID, secret: rival.secret)
            .post("/iap/gateway/lookup-receipt", json: ["order_id": "MQ5VLT9VXT"]).json()
        let rivalEntry = try #require((rivalView["transactions"] as? [[String: Any]])?.first { $0["transaction_id"] as? String == "2000000000009001" }?["gateway"] as? [String: Any])
        #expect(rivalEntry["recorded_for_this_game"] as? Bool == false)
        #expect(rivalEntry["tx_mgmt_id"] is NSNull)
        await service.shutdown()
        await fake.shutdown()
    }
}
