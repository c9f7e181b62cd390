import AppStore
import AppStoreTestSupport
import Foundation
import HiveAxyl
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// An app server written to Hive Axyl's contract over HTTP: a token from `/auth/v1/token`, then verify calls with
/// `Authorization: Bearer` and `X-App-Id`.
struct HiveAxylCaller {
    static let appID = "com.example.game.hive"
    let port: Int
    let clientID: String
    let secret: String

    /// Registers the app id on the harness's client, as `client update --app-id` does.
    static func on(_ harness: VerifyHarness) async throws -> HiveAxylCaller {
        var settings = ClientSettings()
        settings.settings[HiveAxyl.appIDsSetting] = [appID]
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
        return HiveAxylCaller(
            port: harness.client.port, clientID: harness.client.clientID, secret: harness.client.secret)
    }

    func tokenResponse(
        form: String? = nil, basic: Bool = false, json: [String: String]? = nil, secret: String? = nil
    ) async throws -> RawHTTP.Response {
        var headers: [String: String] = [:]
        var body = Data()
        if basic {
            headers["Authorization"] =
                "Basic " + Data("\(clientID):\(secret ?? self.secret)".utf8).base64EncodedString()
            body = Data((form ?? "grant_type=client_credentials").utf8)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        } else if let json {
            body = try JSONSerialization.data(withJSONObject: json)
            headers["Content-Type"] = "application/json"
        } else {
            body = Data(
                (form ?? "grant_type=client_credentials&client_id=\(clientID)&client_secret=\(secret ?? self.secret)")
                    .utf8)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        }
        return try await RawHTTP.request(
            port: port, method: "POST", path: "/auth/v1/token", headers: headers, body: body)
    }

    func token() async throws -> String {
        let response = try await tokenResponse()
        guard response.status == 200, let token = try response.json()["access_token"] as? String else {
            throw RawHTTP.Failure(description: "no token: \(response.status) \(response.text)")
        }
        return token
    }

    func verify(
        _ path: String, _ body: [String: any Sendable], token: String?, appID: String? = HiveAxylCaller.appID
    ) async throws -> RawHTTP.Response {
        var headers = ["Content-Type": "application/json"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        if let appID { headers["X-App-Id"] = appID }
        return try await RawHTTP.request(
            port: port, method: "POST", path: path, headers: headers,
            body: try JSONSerialization.data(withJSONObject: body))
    }

    /// Another process on the same database, speaking HiveAxyl, with its own rate limits.
    static func secondService(beside harness: VerifyHarness, rateLimits: String = "") async throws -> Service {
        var configuration = harness.service.configuration
        configuration.port = 0
        configuration.rateLimits = try ServiceConfiguration.parseRateLimits(rateLimits)
        let logger = Logger(minimumLevel: .error)
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [harness.pki.root]))
        let service = try Service(
            configuration: configuration, logger: logger, database: try Database.open(configuration, logger: logger),
            stores: [provider.registration], dialects: [HiveAxyl()])
        try await service.start()
        return service
    }

    static func purchase(
        _ receipt: String, product: String = "gems.100", account: String = "acc-none", requestType: Int = 1
    ) -> [String: any Sendable] {
        [
            "providerId": "APPLE", "axylReceipt": receipt, "productId": product, "accountUuid": account,
            "requestType": requestType,
        ]
    }

    static func subscription(
        _ receipt: String, account: String = "acc-none", requestType: Int = 1
    ) -> [String: any Sendable] {
        [
            "providerId": "APPLE", "axylReceipt": receipt, "accountUuid": account, "country": "KR", "language": "ko",
            "requestType": requestType,
        ]
    }
}

extension RawHTTP.Response {
    var hiveCode: Int? { ((try? json())?["result"] as? [String: Any])?["code"] as? Int }
    var hiveData: [String: Any]? { (try? json())?["data"] as? [String: Any] }
}

@Suite struct HiveAxylAccessTokens {
    @Test func issuedThreeWaysValidOnEveryProcessAndRevokedByRotation() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000110001"]))

        for response in [
            try await caller.tokenResponse(), try await caller.tokenResponse(basic: true),
            try await caller.tokenResponse(json: [
                "grant_type": "client_credentials", "client_id": caller.clientID, "client_secret": caller.secret,
            ]),
        ] {
            #expect(response.status == 200, "\(response.text)")
            let json = try response.json()
            #expect(json["token_type"] as? String == "Bearer")
            #expect(json["expires_in"] as? Int == 3600)
            #expect(response.headers["cache-control"] == "no-store")
            let token = try #require(json["access_token"] as? String)
            let stored = try await harness.pool.query(
                "SELECT kind FROM tokens WHERE token_sha256 = \(TokenRepository.digest(token))")
            #expect(try stored.first?.decode("kind", as: String.self) == HiveAxyl.tokenKind, "kept only as its SHA-256")
        }
        let wrong = try await caller.tokenResponse(basic: true, secret: "rgs_wrong")
        #expect(wrong.status == 401)
        #expect(try wrong.json()["error"] as? String == "invalid_client")
        #expect(
            try await caller.tokenResponse(form: "grant_type=password").json()["error"] as? String
                == "unsupported_grant_type")

        // A token issued by one process works on another sharing the database.
        let token = try await caller.token()
        let other = try await HiveAxylCaller.secondService(beside: harness)
        defer { Task.detached { await other.shutdown() } }
        let elsewhere = HiveAxylCaller(port: other.port, clientID: caller.clientID, secret: caller.secret)
        #expect(
            try await elsewhere.verify("/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt), token: token)
                .hiveCode == 100)

        // Missing, unknown: 401 in the envelope with the bearer challenge.
        for bad in [nil, "not-a-token"] as [String?] {
            let refused = try await caller.verify(
                "/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt), token: bad)
            #expect(refused.status == 401)
            #expect(refused.hiveCode == 4010)
            #expect(refused.headers["www-authenticate"] == #"Bearer error="invalid_token""#)
            #expect(try refused.json()["data"] is NSNull)
        }
        // A wrong app id: 403.
        let wrongApp = try await caller.verify(
            "/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt), token: token, appID: "other.app")
        #expect(wrongApp.status == 403)
        #expect(wrongApp.hiveCode == 4030)

        // Rotating the secret revokes every token at once; the new secret gets new ones, the old none.
        let newSecret = try await harness.service.clients.rotateSecret(caller.clientID)
        let revoked = try await caller.verify(
            "/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt), token: token)
        #expect(revoked.status == 401)
        #expect(revoked.headers["www-authenticate"] == #"Bearer error="invalid_token""#)
        #expect(try await caller.tokenResponse().status == 401)
        let renewed = HiveAxylCaller(port: caller.port, clientID: caller.clientID, secret: newSecret)
        let fresh = try await renewed.token()
        #expect(
            try await renewed.verify(
                "/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt, requestType: 2), token: fresh
            ).hiveCode == 100)
        // Disabling the client does the same.
        _ = try await harness.service.clients.disable(caller.clientID)
        #expect(
            try await renewed.verify("/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt), token: fresh)
                .status == 401)
        await other.shutdown()
        await harness.service.shutdown()
    }

    /// A change of the client's settings that this process has not heard of yet (its listener
    /// is deaf here) leaves its secret good: the token is issued, not refused as if it had been rotated.
    @Test func aSettingsChangeHeardLateStillIssuesTokens() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        #expect(try await caller.tokenResponse().status == 200, "the client is in this process's memory now")
        try await harness.pool.execute("ALTER TABLE clients DISABLE TRIGGER clients_changed")
        var settings = ClientSettings()
        settings.webhookURL = "https://game.example/hooks"
        _ = try await harness.service.clients.update(caller.clientID, settings)
        let after = try await caller.tokenResponse()
        #expect(after.status == 200, "\(after.text)")
        _ = try await harness.service.clients.rotateSecret(caller.clientID)
        #expect(try await caller.tokenResponse().status == 401, "a rotation heard late still refuses the old secret")
        await harness.service.shutdown()
    }

    /// Whatever a caller sends as its id, one that no client could have (a NUL, which Postgres
    /// cannot hold; the real id in capitals; a thousand characters) is a failed authentication, not an outage.
    @Test func anIdNoClientCouldHaveIsRefusedAsInvalidClient() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        for id in [
            "MJ\u{00}y", caller.clientID + "\u{00}", caller.clientID.uppercased(), String(repeating: "a", count: 1_000),
        ] {
            let refused = try await caller.tokenResponse(json: ["clientId": id, "clientSecret": caller.secret])
            #expect(refused.status == 401, "\(refused.text)")
            #expect(try refused.json()["error"] as? String == "invalid_client")
        }
        #expect(
            try await caller.tokenResponse(json: ["clientId": caller.clientID, "clientSecret": caller.secret]).status
                == 200)
        await harness.service.shutdown()
    }

    @Test func tokensExpire() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl(tokenLifetime: .seconds(60))])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let response = try await caller.tokenResponse(basic: true)
        #expect(try response.json()["expires_in"] as? Int == 60)
        let token = try #require(try response.json()["access_token"] as? String)
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000110101"]))
        #expect(
            try await caller.verify("/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt), token: token)
                .status == 200)
        // Past its expiry without sleeping through it (a loaded machine would make a sleep flaky).
        try await harness.pool.execute("UPDATE tokens SET expires_at = clock_timestamp() - interval '1 second'")
        let expired = try await caller.verify(
            "/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt), token: token)
        #expect(expired.status == 401)
        #expect(expired.hiveCode == 4010)
        #expect(expired.headers["www-authenticate"] == #"Bearer error="invalid_token""#)
        await harness.service.shutdown()
    }

    @Test func theRateLimitAnswers429InTheEnvelope() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let limited = try await HiveAxylCaller.secondService(
            beside: harness, rateLimits: "hiveaxyl.client=2/\(VerifyHarness.rateLimitWindow.components.seconds)s")
        defer { Task.detached { await limited.shutdown() } }
        let there = HiveAxylCaller(port: limited.port, clientID: caller.clientID, secret: caller.secret)
        let token = try await there.token()
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000110201"]))
        var statuses: [Int] = []
        var last: RawHTTP.Response?
        for _ in 0..<3 {
            let response = try await there.verify(
                "/payment/v1/purchase/verify", HiveAxylCaller.purchase(receipt), token: token)
            statuses.append(response.status)
            last = response
        }
        #expect(statuses == [200, 200, 429])
        let refused = try #require(last)
        #expect(refused.hiveCode == 4290)
        #expect(VerifyHarness.isTheWindowsEnd(refused.headers["retry-after"].flatMap(Int.init)))
        await limited.shutdown()
        await harness.service.shutdown()
    }
}
