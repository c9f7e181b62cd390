import Foundation
import HiveAxyl
import PluginTestSupport
import ReceiptCore
import Testing

/// `POST /auth/v1/token` on the fake core: RFC 6749 client credentials, three ways to send them.
@Suite struct HiveAxylTokenEndpoint {
    static func request(
        _ core: FakeCore, body: String, contentType: String = "application/x-www-form-urlencoded",
        basic: (String, String)? = nil, dialect: HiveAxyl = HiveAxyl()
    ) async -> RouteResponse {
        var headers = ["content-type": contentType]
        if let (id, secret) = basic {
            headers["authorization"] = "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString()
        }
        return await core.call(dialect, "POST", "/auth/v1/token", body: Data(body.utf8), headers: headers)
    }

    @Test func formBasicAndJSONEachGetATokenTheVerifyRoutesAccept() async throws {
        let core = Fixture.core()
        let id = Fixture.client.clientID
        let answers = [
            await Self.request(
                core, body: "grant_type=client_credentials&client_id=\(id)&client_secret=\(Fixture.secret)"),
            await Self.request(core, body: "grant_type=client_credentials", basic: (id, Fixture.secret)),
            await Self.request(
                core,
                body: #"{"grant_type":"client_credentials","client_id":"\#(id)","client_secret":"\#(Fixture.secret)"}"#,
                contentType: "application/json"),
        ]
        var tokens: Set<String> = []
        for answer in answers {
            #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
            #expect(answer.object["token_type"] as? String == "Bearer")
            #expect(answer.object["expires_in"] as? Int == 3600)
            #expect(answer.header("Cache-Control") == "no-store")
            let token = try #require(answer.object["access_token"] as? String)
            tokens.insert(token)
            // Usable on the verify route, and kept only as a digest.
            #expect(!core.memoryTokens.storedDigests.contains(token))
            let verified = try await core.verify("/payment/v1/purchase/verify", Fixture.purchaseBody(), token: token)
            #expect(verified.status == 200)
        }
        #expect(tokens.count == 3)
    }

    /// Hive Axyl's app server sends its Client ID and Client Secret as JSON, camelCase or
    /// snake_case, without `grant_type`; then puts the token in `Authorization` bare or as Bearer.
    @Test(arguments: [
        #"{"clientId":"rgc_hive","clientSecret":"rgs_test-secret"}"#,
        #"{"client_id":"rgc_hive","client_secret":"rgs_test-secret"}"#,
        #"{"clientId":"rgc_hive","clientSecret":"rgs_test-secret","grantType":"client_credentials"}"#,
    ])
    func theSeedsJSONBodyGetsATokenUsableBareOrBearer(body: String) async throws {
        let core = Fixture.core()
        let answer = await Self.request(core, body: body, contentType: "application/json")
        #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
        let token = try #require(answer.object["access_token"] as? String)
        let payload = try JSONSerialization.data(withJSONObject: Fixture.purchaseBody())
        for authorization in [token, "Bearer \(token)", "bearer  \(token) "] {
            let verified = await core.call(
                HiveAxyl(), "POST", "/payment/v1/purchase/verify", body: payload,
                headers: ["authorization": authorization, "x-app-id": "com.example.game.hive"])
            #expect(verified.status == 200, "Authorization: \(authorization.prefix(8))...")
            #expect(verified.code == 100)
        }
        // Another scheme, or a wrong bare token, is still no token.
        for authorization in ["Basic \(token)", "not-\(token)", "\(token) extra"] {
            let refused = await core.call(
                HiveAxyl(), "POST", "/payment/v1/purchase/verify", body: payload,
                headers: ["authorization": authorization, "x-app-id": "com.example.game.hive"])
            #expect(refused.status == 401)
            #expect(refused.code == 4010)
        }
    }

    @Test(arguments: [
        (#"{"clientId":"rgc_hive","clientSecret":"wrong"}"#, 401, "invalid_client"),
        (#"{"clientId":"rgc_hive"}"#, 401, "invalid_client"),
        (#"{"clientId":"rgc_hive","client_id":"rgc_hive","clientSecret":"rgs_test-secret"}"#, 400, "invalid_request"),
        (#"{"clientId":42,"clientSecret":"rgs_test-secret"}"#, 400, "invalid_request"),
        (
            #"{"grant_type":"password","clientId":"rgc_hive","clientSecret":"rgs_test-secret"}"#, 400,
            "unsupported_grant_type"
        ),
    ])
    func jsonMistakesAnswerAsRFC6749Says(body: String, status: Int, error: String) async throws {
        let core = Fixture.core()
        let answer = await Self.request(core, body: body, contentType: "application/json")
        #expect(answer.status == status)
        #expect(answer.object["error"] as? String == error)
        #expect(core.memoryTokens.storedDigests.isEmpty)
    }

    @Test func theLifetimeIsConfigurable() async throws {
        let core = Fixture.core()
        let answer = await Self.request(
            core, body: "grant_type=client_credentials", basic: (Fixture.client.clientID, Fixture.secret),
            dialect: HiveAxyl(tokenLifetime: .seconds(120)))
        #expect(answer.object["expires_in"] as? Int == 120)
        let token = try #require(answer.object["access_token"] as? String)
        let stored = try #require(try await core.tokens.resolve(token, kind: HiveAxyl.tokenKind))
        #expect(abs(stored.expiresAt.timeIntervalSinceNow - 120) < 5)

        #expect(try HiveAxyl.fromEnvironment([:]).tokenLifetime == .seconds(3600))
        #expect(
            try HiveAxyl.fromEnvironment(["RECEIPTGATE_HIVEAXYL_TOKEN_SECONDS": "900"]).tokenLifetime == .seconds(900))
        for bad in ["0", "59", "86401", "1h", "-5"] {
            #expect(throws: HiveAxyl.Invalid.self) {
                try HiveAxyl.fromEnvironment(["RECEIPTGATE_HIVEAXYL_TOKEN_SECONDS": bad])
            }
        }
    }

    @Test(arguments: [
        ("client_id=rgc_hive&client_secret=rgs_test-secret", 400, "invalid_request"),
        ("grant_type=password&client_id=rgc_hive&client_secret=rgs_test-secret", 400, "unsupported_grant_type"),
        ("grant_type=authorization_code", 400, "unsupported_grant_type"),
        ("grant_type=client_credentials&client_id=rgc_hive&client_secret=wrong", 401, "invalid_client"),
        ("grant_type=client_credentials&client_id=rgc_nobody&client_secret=rgs_test-secret", 401, "invalid_client"),
        ("grant_type=client_credentials", 401, "invalid_client"),
        ("grant_type=client_credentials&client_id=rgc_hive", 401, "invalid_client"),
        (
            "grant_type=client_credentials&grant_type=client_credentials&client_id=rgc_hive&client_secret=rgs_test-secret",
            400, "invalid_request"
        ),
        ("grant_type=%zz", 400, "invalid_request"),
    ])
    func formMistakesAnswerAsRFC6749Says(body: String, status: Int, error: String) async throws {
        let answer = await Self.request(Fixture.core(), body: body)
        #expect(answer.status == status)
        #expect(answer.object["error"] as? String == error)
        #expect(answer.object["access_token"] == nil)
    }

    @Test func basicMistakes() async throws {
        let core = Fixture.core()
        let wrong = await Self.request(
            core, body: "grant_type=client_credentials", basic: (Fixture.client.clientID, "nope"))
        #expect(wrong.status == 401)
        #expect(wrong.object["error"] as? String == "invalid_client")
        #expect(wrong.header("WWW-Authenticate")?.hasPrefix("Basic") == true)

        let both = await Self.request(
            core, body: "grant_type=client_credentials&client_id=rgc_hive&client_secret=rgs_test-secret",
            basic: (Fixture.client.clientID, Fixture.secret))
        #expect(both.status == 400)
        #expect(both.object["error"] as? String == "invalid_request")

        let garbled = await core.call(
            HiveAxyl(), "POST", "/auth/v1/token", body: Data("grant_type=client_credentials".utf8),
            headers: ["authorization": "Basic !!!not-base64"])
        #expect(garbled.status == 401)
        #expect(garbled.object["error"] as? String == "invalid_client")

        let notJSON = await Self.request(core, body: "{oops", contentType: "application/json")
        #expect(notJSON.status == 400)
        #expect(notJSON.object["error"] as? String == "invalid_request")
        #expect(core.memoryTokens.storedDigests.isEmpty)
    }
}
