import AmazonAppstoreTestSupport
import Foundation
import TestSupport
import Testing

/// Amazon Appstore through the running service: a client made with the CLI's Amazon flags, the
/// native verify API and Hive Axyl answered from a fake RVS, RVS's refusals as a game server
/// sees them, and the shared secret never printed or logged.
@Suite struct AmazonAppstoreEndToEnd {
    static let user = "amzn1.account.user-1"

    @Test func theOperatorsClientVerifiesOnceAndARetryIsADuplicate() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try harness.rvs.addReceipt("r-native", userID: Self.user)
        let first = try await harness.verify("r-native")
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["status"] as? String == "verified")
        #expect(try first.json()["duplicate"] as? Bool == false)
        let transaction = try #require(try first.json()["transaction"] as? [String: Any])
        #expect(transaction["store"] as? String == "amazon_appstore")
        #expect(transaction["transaction_id"] as? String == "r-native")
        #expect(transaction["environment"] as? String == "production")
        let again = try await harness.verify("r-native")
        #expect(again.status == 200)
        #expect(try again.json()["duplicate"] as? Bool == true)
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 1)
        #expect(
            try await harness.count("SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.verified'") == 1)
        // The user id is part of the evidence: without it nothing is asked of RVS.
        let hitsBefore = harness.rvs.hits.count
        let missing = try await harness.verify("r-native", user: nil)
        #expect(missing.status == 400)
        #expect(try missing.json()["error"] as? String == "MISSING_FIELDS")
        #expect(harness.rvs.hits.count == hitsBefore)
    }

    /// The store's own fields are read with the rest of the body, by its rules: of a key given
    /// twice the first counts, for `amazon_user_id` as for `receipt`.
    @Test func theBodyIsReadOnceByOneRule() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try harness.rvs.addReceipt("r-twice", userID: Self.user)
        let body =
            #"{"store":"amazon_appstore","receipt":"r-twice","amazon_user_id":"\#(Self.user)","amazon_user_id":"amzn1.account.other","#
            + #""product_id":"gems100","receipt":"r-other"}"#
        let answer = try await harness.client.post("/v1/verify", body: Data(body.utf8))
        #expect(answer.status == 200, "\(answer.text)")
        #expect((try answer.json()["transaction"] as? [String: Any])?["transaction_id"] as? String == "r-twice")
        let wrongType = try await harness.client.post(
            "/v1/verify", body: Data(#"{"store":"amazon_appstore","receipt":"r-twice","amazon_user_id":7}"#.utf8))
        #expect(wrongType.status == 400)
        #expect(try wrongType.json()["message"] as? String == "field 'amazon_user_id' must be a string")
    }

    @Test func theSharedSecretIsStoredButNeverShown() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        let clientID = harness.client.clientID
        let shown = try await Binary.run(["client", "show", clientID], harness.cli)
        #expect(shown.status == 0, "\(shown.stderr)")
        let object = try Binary.json(shown.stdout)
        #expect(object["has_secret_settings"] as? Bool == true)
        #expect(
            (object["app_identifiers"] as? [String: Any])?["amazon_package_name"] as? [String] == [
                AmazonAppstoreHarness.package
            ])
        let listed = try await Binary.run(["client", "list"], harness.cli)
        for output in [shown.stdout, shown.stderr, listed.stdout, harness.created.description] {
            #expect(
                !output.contains(FakeRVS.sharedSecret) && !output.contains("smXBjZ"),
                "the shared secret must never be printed")
        }
        // Stored: the service reads it to ask RVS (production takes only this secret).
        try harness.rvs.addReceipt("r-secret", userID: Self.user)
        #expect(try await harness.verify("r-secret").status == 200)
    }

    @Test func rvsRefusalsAreAnsweredAsTheGameServerNeedsThemAndTheSecretStaysOutOfTheLog() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        // Unknown receipt (400 from both environments), wrong user (497): the evidence is refused.
        let unknown = try await harness.verify("r-nobody")
        #expect(unknown.status == 422, "\(unknown.text)")
        try harness.rvs.addReceipt("r-theirs", userID: "amzn1.account.someone-else")
        let wrongUser = try await harness.verify("r-theirs")
        #expect(wrongUser.status == 422, "\(wrongUser.text)")
        // RVS refuses the shared secret: our configuration is at fault, named so the operator can fix it.
        harness.rvs.state.alwaysStatus.set(496)
        try harness.rvs.addReceipt("r-bad-secret", userID: Self.user)
        let badSecret = try await harness.verify("r-bad-secret")
        #expect(badSecret.status == 502, "\(badSecret.text)")
        #expect(
            (try badSecret.json()["message"] as? String)?.contains("--amazon-shared-secret") == true,
            "\(badSecret.text)")
        #expect(!badSecret.text.contains("smXBjZ"))
        #expect(try await harness.count("SELECT count(*) AS n FROM transactions") == 0)
        let lines = harness.log.captured
        #expect(
            lines.contains { $0.contains("r-bad-secret") || $0.contains("/v1/verify") },
            "the service did log these requests")
        let encoded = FakeRVS.sharedSecret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        #expect(
            !lines.contains { $0.contains("smXBjZ") || $0.contains(encoded) }, "the shared secret must never be logged")
    }

    @Test func aCanceledReceiptIsAnsweredWithItsStateNeverAsVerified() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try harness.rvs.addReceipt(
            "r-canceled", userID: Self.user, cancelDate: Date(timeIntervalSince1970: 1_716_400_000), cancelReason: 1)
        let answer = try await harness.verify("r-canceled")
        // Answered (the game server learns what happened) but with its state: never "verified".
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try answer.json()["status"] as? String == "refunded", "\(answer.text)")
        let transaction = try #require(try answer.json()["transaction"] as? [String: Any])
        #expect(transaction["state"] as? String == "refunded")
        #expect(transaction["revocation_date_ms"] as? Int == 1_716_400_000_000)
        #expect(try await harness.state("r-canceled") == "refunded")
    }

    @Test func aClientForBothEnvironmentsFallsBackToTheSandbox() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try harness.rvs.addReceipt("r-sandbox", userID: Self.user, sandbox: true, test: true)
        let answer = try await harness.verify("r-sandbox")
        #expect(answer.status == 200, "\(answer.text)")
        #expect((try answer.json()["transaction"] as? [String: Any])?["environment"] as? String == "sandbox")
        #expect(harness.rvs.hits == ["production", "sandbox"])
        // A production-only client never asks the sandbox.
        let production = try await AmazonAppstoreHarness.start(environments: "production")
        defer { production.stop() }
        try production.rvs.addReceipt("r-sandbox", userID: Self.user, sandbox: true)
        #expect(try await production.verify("r-sandbox").status == 422)
        #expect(production.rvs.hits == ["production"])
    }

    @Test func hiveAxylRoutesAmazonToTheStoreWithTheUserIdInCamelCase() async throws {
        let harness = try await AmazonAppstoreHarness.start()
        defer { harness.stop() }
        try harness.rvs.addReceipt("r-hive", userID: Self.user, productID: "gems.100")
        let caller = HiveAxylCaller(
            port: harness.service.port, clientID: harness.client.clientID, secret: harness.client.secret)
        let token = try await caller.token()
        var body: [String: any Sendable] = [
            "providerId": "AMAZON", "axylReceipt": "r-hive", "productId": "gems.100", "accountUuid": "acc-1",
            "requestType": 1, "amazonUserId": Self.user,
        ]
        let answer = try await caller.verify(
            "/payment/v1/purchase/verify", body, token: token, appID: AmazonAppstoreHarness.hiveAppID)
        #expect(answer.hiveCode == 100, "\(answer.text)")
        #expect(
            try await harness.pool.query("SELECT store FROM transactions WHERE transaction_id = 'r-hive'").first?
                .decode("store", as: String.self)
                == "amazon_appstore")
        #expect(harness.rvs.hits == ["production"])
        // Without the user id RVS cannot be asked: refused, nothing asked.
        body["amazonUserId"] = nil
        body["axylReceipt"] = "r-hive-2"
        let missing = try await caller.verify(
            "/payment/v1/purchase/verify", body, token: token, appID: AmazonAppstoreHarness.hiveAppID)
        #expect(missing.hiveCode != 100, "\(missing.text)")
        #expect(harness.rvs.hits == ["production"])
    }
}
