import AlogameGateway
import AppStore
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

@Suite struct NativeVerifyAPI {
    @Test func aGenuinePurchaseIsRecordedOnceAndRetriesAreSafe() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let token = try harness.pki.sign(
            AppleTestPKI.transaction(["appAccountToken": "7E3FB20B-4CDB-47CC-936D-99D65F608138"]))
        let body: [String: Any] = [
            "store": "app_store", "receipt": token, "product_id": "gems.100",
            "app_account_token": "7e3fb20b-4cdb-47cc-936d-99d65f608138", "player_id": "p-1",
        ]
        let first = try await harness.client.post("/v1/verify", json: body)
        #expect(first.status == 200, "\(first.text)")
        let json = try first.json()
        #expect(json["status"] as? String == "verified")
        #expect(json["duplicate"] as? Bool == false)
        #expect((json["first_verified_at"] as? String)?.hasSuffix("Z") == true)
        let transaction = try #require(json["transaction"] as? [String: Any])
        #expect(transaction["transaction_id"] as? String == "2000000111111111")
        #expect(transaction["store"] as? String == "app_store")
        #expect(transaction["environment"] as? String == "sandbox")
        #expect(transaction["type"] as? String == "consumable")
        #expect(transaction["price_milliunits"] as? Int == 990)
        #expect(transaction["currency"] as? String == "USD")
        #expect(transaction["ownership"] as? String == "purchased")
        #expect(transaction["account_match"] as? String == "match")
        #expect(transaction["state"] as? String == "active")
        #expect(transaction.keys.contains("expires_date_ms"))
        #expect(transaction["expires_date_ms"] is NSNull)

        let again = try await harness.client.post("/v1/verify", json: body)
        #expect(again.status == 200)
        #expect(try again.json()["duplicate"] as? Bool == true)
        #expect((try again.json()["transaction"] as? [String: Any])?["id"] as? Int == transaction["id"] as? Int)
        #expect(try await harness.count("transactions") == 1)
        #expect(try await harness.count("verification_attempts") == 2)

        var other = body
        other["app_account_token"] = UUID().uuidString
        #expect(
            (try await harness.client.post("/v1/verify", json: other).json()["transaction"] as? [String: Any])?[
                "account_match"] as? String == "mismatch")
        other["app_account_token"] = nil
        #expect(
            (try await harness.client.post("/v1/verify", json: other).json()["transaction"] as? [String: Any])?[
                "account_match"] as? String == "not_comparable")
        await harness.service.shutdown()
    }

    @Test func authenticationFailuresAre401() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let body: [String: Any] = ["store": "app_store", "receipt": "x.y.z"]
        #expect(try await harness.client.post("/v1/verify", json: body, secretOverride: "wrong").status == 401)
        #expect(
            try await harness.client.post("/v1/verify", json: body, timestamp: Int(Date().timeIntervalSince1970) - 301)
                .status == 401)
        let stranger = SignedClient(port: harness.client.port, clientID: "rgc_unknown", secret: "s")
        #expect(try await stranger.post("/v1/verify", json: body).status == 401)
        let unsigned = try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/v1/verify", body: Data("{}".utf8))
        #expect(unsigned.status == 401)
        #expect(try unsigned.json()["error"] as? String == "UNAUTHORIZED")
        await harness.service.shutdown()
    }

    @Test func clientMistakesAndRefusalsUseTheStatusTable() async throws {
        let harness = try await VerifyHarness.start(environments: [.production])
        defer { harness.stop() }
        let sandboxToken = try harness.pki.sign(AppleTestPKI.transaction())
        let productionToken = try harness.pki.sign(
            AppleTestPKI.transaction(["environment": "Production", "transactionId": "2000000222222222"]))
        let cases: [([String: Any], Int, String)] = [
            (["receipt": productionToken], 400, "MISSING_FIELDS"),
            (["store": "app_store"], 400, "MISSING_FIELDS"),
            (["store": "steam", "receipt": productionToken], 400, "INVALID_FIELD"),
            (
                ["store": "app_store", "receipt": productionToken, "app_account_token": "not-a-uuid"], 400,
                "INVALID_FIELD"
            ),
            (["store": "app_store", "receipt": productionToken, "product_id": "gems.999"], 422, "PRODUCT_MISMATCH"),
            (["store": "app_store", "receipt": sandboxToken], 412, "ENVIRONMENT_MISMATCH"),
            (
                [
                    "store": "app_store",
                    "receipt": try harness.pki.sign(
                        AppleTestPKI.transaction(["environment": "Production", "bundleId": "com.other"])),
                ], 422, "BUNDLE_MISMATCH"
            ),
            (
                [
                    "store": "app_store",
                    "receipt": try AppleTestPKI().sign(AppleTestPKI.transaction(["environment": "Production"])),
                ], 422, "VERIFICATION_FAILED"
            ),
            (["store": "app_store", "receipt": "garbage"], 422, "VERIFICATION_FAILED"),
        ]
        for (body, status, code) in cases {
            let response = try await harness.client.post("/v1/verify", json: body)
            #expect(response.status == status, "\(body.keys.sorted()) → \(response.status) \(response.text)")
            #expect(try response.json()["error"] as? String == code)
        }
        let notJSON = try await harness.client.post("/v1/verify", body: Data("{not json".utf8))
        #expect(notJSON.status == 400)
        // Every refusal that reached the pipeline is on record for support, with its code.
        let failures = try await harness.pool.query(
            "SELECT error_code FROM verification_attempts WHERE outcome = 'failed' ORDER BY id")
        #expect(
            try failures.map { try $0.decode("error_code", as: String.self) }
                == [
                    "INVALID_FIELD", "PRODUCT_MISMATCH", "ENVIRONMENT_MISMATCH", "BUNDLE_MISMATCH",
                    "VERIFICATION_FAILED", "VERIFICATION_FAILED",
                ])
        #expect(try await harness.count("transactions") == 0)
        await harness.service.shutdown()
    }

    @Test func anotherGameCannotRedeemTheSamePurchase() async throws {
        let harness = try await VerifyHarness.start(gameID: 1)
        defer { harness.stop() }
        let token = try harness.pki.sign(AppleTestPKI.transaction())
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": token]).status == 200)
        let rival = try await harness.service.clients.create(
            VerifyHarness.settings(name: "Rival", environments: [.sandbox], gameID: 2))
        let rivalClient = SignedClient(port: harness.client.port, clientID: rival.client.clientID, secret: rival.secret)
        let response = try await rivalClient.post("/v1/verify", json: ["store": "app_store", "receipt": token])
        #expect(response.status == 409)
        #expect(try response.json()["error"] as? String == "DUPLICATE_TRANSACTION")
        // A second client of the same game sees the same record.
        let sibling = try await harness.service.clients.create(
            VerifyHarness.settings(name: "Sibling", environments: [.sandbox], gameID: 1))
        let siblingClient = SignedClient(
            port: harness.client.port, clientID: sibling.client.clientID, secret: sibling.secret)
        #expect(
            try await siblingClient.post("/v1/verify", json: ["store": "app_store", "receipt": token]).json()[
                "duplicate"] as? Bool == true)
        await harness.service.shutdown()
    }
}

@Suite struct RefusedFromTheHeaders {
    /// A signed route whose headers already fail is answered before any body is read: 1 MB
    /// announced, 5 bytes sent, the 401 comes back at once in the route's own envelope.
    @Test(arguments: ["/v1/verify", "/iap/gateway/verify"])
    func anUnsignedRequestIsRefusedWithoutReadingItsBody(path: String) async throws {
        let harness = try await VerifyHarness.start(dialects: [AlogameGateway()])
        defer { harness.stop() }
        let started = ContinuousClock.now
        let head = Data(
            "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\nhello"
                .utf8)
        let response = try await RawHTTP.exchange(port: harness.client.port, pieces: [head], timeout: 25)
        #expect(response.status == 401)
        #expect(try response.json()["error"] as? String == "UNAUTHORIZED")
        #expect(
            ContinuousClock.now - started < .seconds(20),
            "not left waiting for the body until the 30 s receive deadline")
        await harness.service.shutdown()
    }
}
