import AlogameGateway
import AppStore
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The Alogame gateway contract's support tool, asking a local fake of the App Store Server API.
@Suite struct AlogameLookupReceipt {
    /// The service with the gateway, asking `fake` for orders; one order of two transactions.
    static func start(_ fake: FakeAppStoreServerAPI) async throws -> VerifyHarness {
        try fake.add("2000000000009001", environment: "Production", ["productId": "gems100"])
        try fake.add("2000000000009002", environment: "Production", ["productId": "gems500"])
        return try await VerifyHarness.start(environments: [.production], dialects: [AlogameGateway()], pki: fake.pki) {
            pki in
            var appStore = AppStoreConfiguration(trustRoots: [pki.root])
            appStore.serverAPIKey = .init(
                keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID, privateKey: fake.teamKey)
            appStore.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
            appStore.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
            return appStore
        }
    }

    @Test func ordersAreReportedAgainstWhatTheGatewayReceived() async throws {
        let fake = try FakeAppStoreServerAPI()
        let harness = try await Self.start(fake)
        defer { harness.stop() }
        let service = harness.service, client = harness.client

        // The gateway received one of the order's two transactions.
        let signed = try #require(fake.state.known.get()["Production"]?["2000000000009001"])
        #expect(
            try await client.post(
                "/iap/gateway/verify", json: ["receipt": signed, "product_id": "gems100", "os_id": 2]
            ).status == 200)

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
        let missed = try #require(
            transactions.first { $0["transaction_id"] as? String == "2000000000009002" }?["gateway"] as? [String: Any])
        #expect(missed["found"] as? Bool == false)
        #expect(missed["reason"] as? String == "NEVER_RECEIVED_BY_GATEWAY")

        let unknown = try await client.post("/iap/gateway/lookup-receipt", json: ["order_id": "NOSUCHORDER"]).json()
        #expect(unknown["found"] as? Bool == false)
        #expect((unknown["transactions"] as? [Any])?.isEmpty == true)
        let broken = try await client.post("/iap/gateway/lookup-receipt", json: ["order_id": "BROKENDATA"]).json()
        #expect(
            ((broken["transactions"] as? [[String: Any]])?.first?["gateway"] as? [String: Any])?["reason"] as? String
                == "DECODE_FAILED")
        #expect(try await client.post("/iap/gateway/lookup-receipt", json: [:]).status == 400)

        // Another game's client sees that the gateway has it, never its record.
        let rival = try await service.clients.create(
            VerifyHarness.settings(name: "Rival", environments: [.production], gameID: 7))
        let rivalView = try await SignedClient(
            port: service.port, clientID: rival.client.clientID, secret: rival.secret
        )
        .post("/iap/gateway/lookup-receipt", json: ["order_id": "MQ5VLT9VXT"]).json()
        let rivalEntry = try #require(
            (rivalView["transactions"] as? [[String: Any]])?.first {
                $0["transaction_id"] as? String == "2000000000009001"
            }?["gateway"] as? [String: Any])
        #expect(rivalEntry["recorded_for_this_game"] as? Bool == false)
        #expect(rivalEntry["tx_mgmt_id"] is NSNull)
        await service.shutdown()
        await fake.shutdown()
    }

    /// The lookup says why a /verify was refused: `last_error_code` / `last_error_message` are the
    /// last refusal of that transaction by this game, as it was answered; another game's refusals
    /// are not shown.
    @Test func lastErrorsAreTheLedgersRefusedAttempts() async throws {
        let fake = try FakeAppStoreServerAPI()
        let harness = try await Self.start(fake)
        defer { harness.stop() }
        let service = harness.service, client = harness.client
        let known = fake.state.known.get()["Production"] ?? [:]
        let first = try #require(known["2000000000009001"]), second = try #require(known["2000000000009002"])
        // The game verifies the first transaction, and sends the second with the first one's product id.
        #expect(
            try await client.post("/iap/gateway/verify", json: ["receipt": first, "product_id": "gems100", "os_id": 2])
                .status == 200)
        let wrongProduct = try await client.post(
            "/iap/gateway/verify", json: ["receipt": second, "product_id": "gems100", "os_id": 2])
        #expect(wrongProduct.status == 422)
        #expect(try wrongProduct.json()["error"] as? String == "PRODUCT_MISMATCH")
        // Another game presents the first transaction: refused as that game's duplicate.
        let rival = try await service.clients.create(
            VerifyHarness.settings(name: "Rival", environments: [.production], gameID: 7))
        let rivalClient = SignedClient(port: service.port, clientID: rival.client.clientID, secret: rival.secret)
        let taken = try await rivalClient.post(
            "/iap/gateway/verify", json: ["receipt": first, "product_id": "gems100", "os_id": 2])
        #expect(taken.status == 409)

        func gateways(_ caller: SignedClient) async throws -> [String: [String: Any]] {
            let entries = try #require(
                try await caller.post("/iap/gateway/lookup-receipt", json: ["order_id": "MQ5VLT9VXT"]).json()[
                    "transactions"] as? [[String: Any]])
            return Dictionary(
                uniqueKeysWithValues: entries.compactMap { entry in
                    (entry["transaction_id"] as? String).flatMap { id in
                        (entry["gateway"] as? [String: Any]).map { (id, $0) }
                    }
                })
        }
        let mine = try await gateways(client)
        let refused = try #require(mine["2000000000009002"])
        #expect(refused["found"] as? Bool == false)
        #expect(refused["reason"] as? String == "NEVER_RECEIVED_BY_GATEWAY")
        #expect(refused["last_error_code"] as? String == "PRODUCT_MISMATCH")
        #expect(
            refused["last_error_message"] as? String == (try wrongProduct.json()["message"] as? String),
            "the message the refused call got")
        let recorded = try #require(mine["2000000000009001"])
        #expect(recorded["current_state"] as? String == "gateway_verified")
        #expect(recorded["last_error_code"] is NSNull, "the rival's refusal is not this game's")
        #expect(recorded["last_error_message"] is NSNull)

        let theirs = try await gateways(rivalClient)
        #expect(theirs["2000000000009001"]?["recorded_for_this_game"] as? Bool == false)
        #expect(theirs["2000000000009001"]?["last_error_code"] as? String == "DUPLICATE_TRANSACTION")
        #expect(theirs["2000000000009002"]?["last_error_code"] is NSNull, "this game's refusal is not the rival's")
        await service.shutdown()
        await fake.shutdown()
    }
}
