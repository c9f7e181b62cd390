import AmazonAppstoreTestSupport
import Foundation
import TestSupport
import Testing

/// The built `receiptgate serve`, configured for Amazon only through its environment, as an
/// operator runs it: RVS's refusal of the shared secret reaches the game server as a 502 naming
/// the setting, and neither that nor anything else puts the secret on stderr.
@Suite struct AmazonAppstoreEndToEndBinary {
    @Test func theServedBinaryNamesTheSettingAndKeepsTheSecretOffStderr() async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        var environment = try await Binary.databaseEnvironment()
        let created = try await AmazonAppstoreHarness.createClient(environment)
        environment["RECEIPTGATE_PORT"] = "0"
        environment["RECEIPTGATE_LOG_LEVEL"] = "debug"  // every line the service can write
        environment["RECEIPTGATE_AMAZON_RVS_URL"] = rvs.baseURL
        environment["RECEIPTGATE_AMAZON_SNS_CERT_URL_PATTERN"] = sns.certificateURLPattern
        let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(environment))
        let listening = try Binary.json(try await server.waitForStderrLine(containing: "\"listening\""))
        let port = try #require(Int((listening["url"] as? String)?.split(separator: ":").last ?? ""))
        let client = SignedClient(
            port: port, clientID: created["client_id"] as? String ?? "",
            secret: created["client_secret"] as? String ?? "")
        let body: [String: Any] = [
            "store": "amazon_appstore", "receipt": "r-served", "amazon_user_id": AmazonAppstoreEndToEnd.user,
        ]

        try rvs.addReceipt("r-served", userID: AmazonAppstoreEndToEnd.user)
        let verified = try await client.post("/v1/verify", json: body)
        #expect(verified.status == 200, "\(verified.text)")
        #expect(try verified.json()["status"] as? String == "verified")
        rvs.state.alwaysStatus.set(496)
        let refused = try await client.post("/v1/verify", json: body)
        #expect(refused.status == 502, "\(refused.text)")
        #expect(
            (try refused.json()["message"] as? String)?.contains("--amazon-shared-secret") == true, "\(refused.text)")
        // The SNS endpoint answers too: the binary mounted the provider's notification route.
        let confirmation = try await RawHTTP.request(
            port: port, method: "POST", path: "/v1/notifications/amazon-appstore",
            headers: ["Content-Type": "text/plain; charset=UTF-8"],
            body: try sns.subscriptionConfirmation(token: "served-token-1"))
        #expect(confirmation.status == 200, "\(confirmation.text)")

        server.send(SIGTERM)
        #expect(try await server.wait(timeout: .seconds(30)) == 0)
        let stderr = server.stderr
        #expect(stderr.contains("/v1/verify") && stderr.contains("served-token-1"), "the log is the service's")
        let encoded = FakeRVS.sharedSecret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        #expect(!stderr.contains("smXBjZ") && !stderr.contains(encoded), "the shared secret must never be logged")
        #expect(ServerLogScan.findings(in: stderr.split(separator: "\n").map(String.init)).isEmpty)
        await rvs.shutdown()
        await sns.shutdown()
    }
}
