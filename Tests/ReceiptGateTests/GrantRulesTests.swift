import AlogameGateway
import AppStoreTestSupport
import Foundation
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A success answer means "deliver the item": never for evidence that is refunded, revoked or
/// over, nor for a purchase made for another account; no delivery is queued for any of them.
@Suite struct GrantRules {
    static let nowMs = Int64(Date().timeIntervalSince1970 * 1000)

    static func start() async throws -> VerifyHarness {
        try await VerifyHarness.start(
            webhookURL: "http://127.0.0.1:9/webhook", deliveryURL: "http://127.0.0.1:9/deliver",
            dialects: [AlogameGateway()])
    }

    static func events(_ harness: VerifyHarness, _ type: String) async throws -> [[String: Any]] {
        try await harness.pool.query(
            """
            SELECT \(unescaped: OutboxRepository.bodyColumn) AS p FROM outbox o
            WHERE event_type = \(type) ORDER BY o.id
            """
        ).map {
            try #require(
                try JSONSerialization.jsonObject(with: Data(try $0.decode("p", as: String.self).utf8)) as? [String: Any]
            )
        }
    }

    @Test(
        arguments: [
            (["revocationDate": nowMs - 1000, "revocationReason": 0], "refunded"),
            (["revocationDate": nowMs - 1000], "revoked"),
            (["type": "Auto-Renewable Subscription", "expiresDate": nowMs - 60_000], "expired"),
        ] as [([String: any Sendable], String)])
    func evidenceThatIsNotActiveIsAnsweredWithItsStateAndNeverDelivered(
        fields: [String: any Sendable], state: String
    ) async throws {
        let harness = try await Self.start()
        defer { harness.stop() }
        let id = "2000000000012345"  // each case has a database of its own
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(fields.merging(["transactionId": id, "originalTransactionId": id]) { $1 }))
        let native = try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt])
        #expect(native.status == 200, "\(native.text)")
        #expect(try native.json()["status"] as? String == state)
        #expect((try native.json()["transaction"] as? [String: Any])?["state"] as? String == state)

        let gateway = try await harness.client.post(
            "/iap/gateway/verify", json: ["receipt": receipt, "product_id": "gems.100", "os_id": 2])
        #expect(gateway.status == 422)
        #expect(try gateway.json()["error"] as? String == "VERIFICATION_FAILED")
        #expect((try gateway.json()["message"] as? String)?.contains(state) == true)

        #expect(try await Self.events(harness, "entitlement.delivery").isEmpty)
        #expect(
            try await Self.events(harness, "transaction.verified").count == 1,
            "the game server is still told what happened")
        await harness.service.shutdown()
    }

    @Test func aMismatchedAccountIsFlaggedByDefaultAndRefusedWhenTheClientSaysSo() async throws {
        let harness = try await Self.start()
        defer { harness.stop() }
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["appAccountToken": "7E3FB20B-4CDB-47CC-936D-99D65F608138"]))
        let body: [String: Any] = ["store": "app_store", "receipt": receipt, "app_account_token": UUID().uuidString]
        let flagged = try await harness.client.post("/v1/verify", json: body)
        #expect(flagged.status == 200)
        #expect((try flagged.json()["transaction"] as? [String: Any])?["account_match"] as? String == "mismatch")
        // The event carries the comparison made before the commit, and nothing is delivered.
        let verified = try await Self.events(harness, "transaction.verified")
        #expect(
            ((verified.first?["data"] as? [String: Any])?["transaction"] as? [String: Any])?["account_match"] as? String
                == "mismatch")
        #expect(try await Self.events(harness, "entitlement.delivery").isEmpty)

        var reject = ClientSettings()
        reject.settings[Client.accountMismatchSetting] = ["reject"]
        _ = try await harness.service.clients.update(harness.client.clientID, reject)
        // The change reaches the serving process by notification (or the cache's lifetime): wait
        // until it is in effect there, as a second process would.
        let deadline = ContinuousClock.now + .seconds(15)
        while try await harness.service.clientCache?.entry(for: harness.client.clientID)?.client.info.setting(
            Client.accountMismatchSetting) != "reject"
        {
            guard ContinuousClock.now < deadline else { Issue.record("the new setting never reached the cache"); break }
            try await Task.sleep(for: .milliseconds(20))
        }
        let other = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000088001", "appAccountToken": UUID().uuidString]))
        let refused = try await harness.client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": other, "app_account_token": UUID().uuidString])
        #expect(refused.status == 422)
        #expect(try refused.json()["error"] as? String == "ACCOUNT_MISMATCH")
        #expect(try await harness.count("transactions") == 1, "a refused purchase is not recorded")
        // A matching account is delivered as before.
        let token = UUID().uuidString
        let matching = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000088002", "appAccountToken": token]))
        #expect(
            try await harness.client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": matching, "app_account_token": token]
            ).status == 200)
        #expect(try await Self.events(harness, "entitlement.delivery").count == 1)
        await harness.service.shutdown()
    }
}

/// Identifiers callers send are judged by ReceiptCore's rule (its own tests hold the cases); here,
/// that every route applies it: a 400 naming the field, never silently cut, never a 500, and a
/// value at the limit (256 bytes, 128 two-byte characters) still accepted.
@Suite struct IdentifierRules {
    @Test func badIdentifiersAre400OnEveryRoute() async throws {
        let harness = try await VerifyHarness.start(
            webhookURL: "http://127.0.0.1:9/webhook", dialects: [AlogameGateway()])
        defer { harness.stop() }
        let receipt = try harness.pki.sign(AppleTestPKI.transaction())
        for value in ["line\nbreak", String(repeating: "é", count: 129)] {
            let native = try await harness.client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": value])
            #expect(native.status == 400)
            #expect(try native.json()["error"] as? String == "INVALID_FIELD")
            #expect((try native.json()["message"] as? String)?.contains("player_id") == true)
            let gateway = try await harness.client.post(
                "/iap/gateway/verify",
                json: ["receipt": receipt, "product_id": "gems.100", "os_id": 2, "player_id": value])
            #expect(gateway.status == 400)
            #expect(try gateway.json()["error"] as? String == "MISSING_FIELDS")
            let read = try await harness.client.get(
                "/v1/players/\(value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")/transactions")
            #expect(read.status == 400)
        }
        #expect(try await harness.count("transactions") == 0)
        let fine = try await harness.client.post(
            "/v1/verify",
            json: ["store": "app_store", "receipt": receipt, "player_id": String(repeating: "é", count: 128)])
        #expect(fine.status == 200)
        await harness.service.shutdown()
    }
}

/// `/metrics` must not grow with what callers send: unknown methods count as OTHER, unknown
/// paths as one `unmatched` route.
@Suite struct MetricsStayBounded {
    @Test func strangeMethodsAndPathsAddNoSeries() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let port = harness.client.port
        _ = try await RawHTTP.request(port: port, method: "BREW", path: "/pot-0")
        _ = try await RawHTTP.request(port: port, path: "/nowhere-0")
        _ = try await RawHTTP.request(port: port, path: "/metrics")  // its own series exists from now on
        let before = try await RawHTTP.request(port: port, path: "/metrics").text.split(separator: "\n").filter {
            !$0.hasPrefix("#")
        }.count
        for index in 1...40 {
            _ = try await RawHTTP.request(port: port, method: "BREW\(index)", path: "/pot-\(index)")
            _ = try await RawHTTP.request(port: port, path: "/nowhere-\(index)")
        }
        let metrics = try await RawHTTP.request(port: port, path: "/metrics").text
        let after = metrics.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
        #expect(after == before)
        #expect(!metrics.contains("BREW"))
        #expect(!metrics.contains("nowhere"))
        await harness.service.shutdown()
    }
}

@Suite struct StoreWordBeatsTheLedger {
    /// A purchase recorded active, then refunded without the notification reaching us: verifying
    /// it again answers (and records) what the store says now, never "deliver".
    @Test func aRefundLearnedOnlyFromTheEvidenceIsAnsweredAsSuch() async throws {
        let harness = try await VerifyHarness.start(dialects: [AlogameGateway()])
        defer { harness.stop() }
        let id = "2000000000066001"
        let active = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id]))
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": active]).json()[
                "status"] as? String == "verified")
        let refunded = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": id, "originalTransactionId": id,
                "revocationDate": GrantRules.nowMs, "revocationReason": 1,
            ]))
        let again = try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": refunded])
        #expect(again.status == 200)
        #expect(try again.json()["status"] as? String == "refunded")
        #expect(try again.json()["duplicate"] as? Bool == true)
        // Kept: the old evidence, re-sent, no longer says "deliver" either.
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": active]).json()[
                "status"] as? String == "refunded")
        let gateway = try await harness.client.post(
            "/iap/gateway/verify", json: ["receipt": active, "product_id": "gems.100", "os_id": 2])
        #expect(gateway.status == 422)
        await harness.service.shutdown()
    }

    /// Reads show only the environments the client accepts, even within its game.
    @Test func readsStayInTheClientsEnvironments() async throws {
        let harness = try await VerifyHarness.start(environments: [.production, .sandbox], gameID: 5)
        defer { harness.stop() }
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000066101"]))
        #expect(
            try await harness.client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "p"]
            ).status == 200)
        #expect(try await harness.client.get("/v1/transactions/app_store/2000000000066101").status == 200)
        let sibling = try await harness.service.clients.create(
            VerifyHarness.settings(name: "Live", environments: [.production], gameID: 5))
        let live = SignedClient(port: harness.client.port, clientID: sibling.client.clientID, secret: sibling.secret)
        #expect(try await live.get("/v1/transactions/app_store/2000000000066101").status == 404)
        #expect((try await live.get("/v1/players/p/transactions").json()["transactions"] as? [Any])?.isEmpty == true)
        await harness.service.shutdown()
    }
}
