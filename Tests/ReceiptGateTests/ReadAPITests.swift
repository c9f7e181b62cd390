import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import ReceiptGate
import TestSupport
import Testing

@Suite struct LedgerReadAPI {
    /// A new purchase's answer is built from what was inserted (group commit reads back only the
    /// row's id and time): it must say exactly what the ledger then holds, field for field.
    @Test func theAnswerToANewPurchaseIsWhatTheLedgerHolds() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let token = UUID().uuidString.lowercased()
        let fields: [String: any Sendable] = [
            "transactionId": "2000000000004242", "originalTransactionId": "2000000000004240", "productId": "gems.500",
            "type": "Consumable", "quantity": 3, "price": 4_990, "currency": "EUR", "storefront": "FRA",
            "appAccountToken": token, "inAppOwnershipType": "PURCHASED", "purchaseDate": 1_764_000_000_123,
        ]
        let answer = try await harness.client.post(
            "/v1/verify",
            json: [
                "store": "app_store", "receipt": try harness.pki.sign(AppleTestPKI.transaction(fields)),
                "player_id": "hero-9", "app_account_token": token,
            ])
        #expect(answer.status == 200, "\(answer.text)")
        let answered = try #require(try answer.json()["transaction"] as? [String: Any])
        #expect(answered["price_milliunits"] as? Int == 4_990)
        #expect(answered["purchase_date_ms"] as? Int == 1_764_000_000_123)
        #expect(answered["account_match"] as? String == "match")
        let read = try await harness.client.get("/v1/transactions/app_store/2000000000004242")
        var stored = try #require(try read.json()["transaction"] as? [String: Any])
        // The comparison of tokens is about one request; the ledger read has none to compare.
        stored["account_match"] = answered["account_match"]
        #expect(NSDictionary(dictionary: answered) == NSDictionary(dictionary: stored))
        #expect(Set(answered.keys) == Set(stored.keys))
    }

    @Test func transactionsSubscriptionsAndPlayerPages() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let expires = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000
        for (index, id) in ["2000000000001001", "2000000000001002", "2000000000001003"].enumerated() {
            var fields: [String: any Sendable] = ["transactionId": id, "originalTransactionId": "2000000000001001"]
            if index == 2 {
                fields["type"] = "Auto-Renewable Subscription"; fields["expiresDate"] = expires;
                fields["productId"] = "vip.monthly"
            }
            let response = try await harness.client.post(
                "/v1/verify",
                json: [
                    "store": "app_store", "receipt": try harness.pki.sign(AppleTestPKI.transaction(fields)),
                    "player_id": "hero-7",
                ])
            #expect(response.status == 200)
        }

        let one = try await harness.client.get("/v1/transactions/app_store/2000000000001002")
        #expect(one.status == 200)
        #expect((try one.json()["transaction"] as? [String: Any])?["transaction_id"] as? String == "2000000000001002")
        #expect(try await harness.client.get("/v1/transactions/app_store/2000000000009999").status == 404)
        #expect(try await harness.client.get("/v1/transactions/app_store/2000000000001002?x=1").status == 200)

        var ids: [String] = []
        var after: Int?
        repeat {
            let page = try await harness.client.get(
                "/v1/players/hero-7/transactions?limit=2" + (after.map { "&after=\($0)" } ?? ""))
            #expect(page.status == 200)
            let json = try page.json()
            ids += (json["transactions"] as? [[String: Any]] ?? []).compactMap { $0["transaction_id"] as? String }
            after = json["next_after"] as? Int
        } while after != nil
        #expect(ids == ["2000000000001001", "2000000000001002", "2000000000001003"])
        #expect(try await harness.client.get("/v1/players/hero-7/transactions?limit=0").status == 400)

        let subscription = try await harness.client.get("/v1/subscriptions/app_store/2000000000001001")
        #expect(subscription.status == 200, "\(subscription.text)")
        let json = try subscription.json()
        #expect(json["status"] as? String == "active")
        #expect(json["expires_date_ms"] as? Int == Int(expires))
        #expect((json["latest_transaction"] as? [String: Any])?["transaction_id"] as? String == "2000000000001003")

        // Another game's client sees none of it.
        let other = try await harness.service.clients.create(
            VerifyHarness.settings(name: "Other", environments: [.sandbox], gameID: 99))
        let stranger = SignedClient(port: harness.client.port, clientID: other.client.clientID, secret: other.secret)
        #expect(try await stranger.get("/v1/transactions/app_store/2000000000001002").status == 404)
        #expect(try await stranger.get("/v1/subscriptions/app_store/2000000000001001").status == 404)
        #expect(
            (try await stranger.get("/v1/players/hero-7/transactions").json()["transactions"] as? [Any])?.isEmpty
                == true)
        #expect(
            try await RawHTTP.request(port: harness.client.port, path: "/v1/transactions/app_store/2000000000001002")
                .status == 401)

        // A GET signature covers its path and query: it cannot be reused for another read, and the
        // body-only scheme (version 1) is refused for reads.
        #expect(
            try await harness.client.get(
                "/v1/transactions/app_store/2000000000001003",
                signedTarget: "/v1/transactions/app_store/2000000000001002"
            ).status == 401)
        #expect(
            try await harness.client.get(
                "/v1/players/hero-7/transactions?limit=1",
                signedTarget: "/v1/players/hero-7/transactions?limit=2"
            ).status == 401)
        #expect(try await harness.client.get("/v1/transactions/app_store/2000000000001002", version: "1").status == 401)
        await harness.service.shutdown()
    }
}

@Suite struct SignatureVersion2 {
    /// Version 2 is accepted on POSTs too, and binds the signature to the method and path.
    @Test func version2SignsMethodAndTargetOnEveryRoute() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let body = try JSONSerialization.data(withJSONObject: [
            "store": "app_store", "receipt": try harness.pki.sign(AppleTestPKI.transaction()),
        ])
        func post(signing target: String, to path: String) async throws -> RawHTTP.Response {
            let stamp = String(Int(Date().timeIntervalSince1970))
            let message = try ClientAuthentication.messageV2(
                clientID: harness.client.clientID, timestamp: stamp, method: "POST", target: target, body: body)
            let signature = Hex.encode(
                try HMACSHA256.authenticationCode(key: Data(harness.client.secret.utf8), message: Data(message.utf8)))
            return try await RawHTTP.request(
                port: harness.client.port, method: "POST", path: path,
                headers: [
                    "Content-Type": "application/json", "X-Client-ID": harness.client.clientID, "X-Timestamp": stamp,
                    "X-Signature": signature, "X-Signature-Version": "2",
                ], body: body)
        }
        #expect(try await post(signing: "/v1/verify", to: "/v1/verify").status == 200)
        #expect(try await post(signing: "/iap/gateway/verify", to: "/v1/verify").status == 401)
        await harness.service.shutdown()
    }
}
