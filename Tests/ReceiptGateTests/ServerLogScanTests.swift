import AlogameGateway
import AppStoreTestSupport
import Foundation
import ReceiptCore
import TestSupport
import Testing

/// The log scan itself: it finds each kind of secret (so a clean scan means something), and a
/// service driven through the requests most likely to log what they carry — wrong signatures,
/// forged and tampered receipts, refused tokens, a retried verification — logs none of it.
/// Every other end-to-end suite is scanned too, by `VerifyHarness.stop()`.
@Suite struct ServerLogScanning {
    @Test func eachKindOfSecretIsFound() {
        let leaks = [
            #"{"message":"client created","secret":"rgs_Q2xpZW50U2VjcmV0VGhhdE11c3ROb3RCZUxvZ2dlZA"}"#,
            #"{"message":"token","authorization":"Bearer rgt_QmVhcmVyVG9rZW5UaGF0TXVzdE5vdEJlTG9nZ2Vk"}"#,
            #"{"message":"bad receipt eyJhbGciOiJFUzI1NiIsIng1YyI6WyJNSUlFTURDQ0E3YWdBd0lCQWdJUWZUbGZk"}"#,
            #"{"message":"receipt MIIT"# + String(repeating: "QUJD", count: 40) + #""}"#,
            #"{"message":"-----BEGIN PRIVATE KEY-----"}"#,
        ]
        let found = ServerLogScan.findings(in: leaks)
        #expect(found.count == 5, "\(found)")
        #expect(found.allSatisfy { !$0.contains("Q2xpZW50U2VjcmV0VGhhdE11c3ROb3RCZUxvZ2dlZA") })
        #expect(
            ServerLogScan.findings(in: [
                #"{"message":"request","client.id":"rgc_0123456789abcdef01234567","status":"401"}"#
            ]).isEmpty)
    }

    @Test func aServiceProvokedToLogWhatItCarriesLogsNoSecret() async throws {
        let harness = try await VerifyHarness.start(
            environments: [.sandbox], adminToken: String(repeating: "a", count: 32), dialects: [AlogameGateway()])
        defer { harness.stop() }
        let client = harness.client
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000004401"]))
        let forged = try AppleTestPKI().sign(AppleTestPKI.transaction(["transactionId": "2000000000004402"]))
        let tampered = receipt.dropLast(4) + "AAAA"
        #expect(try await client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        #expect(try await client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        #expect(try await client.post("/v1/verify", json: ["store": "app_store", "receipt": forged]).status == 422)
        #expect(
            try await client.post("/v1/verify", json: ["store": "app_store", "receipt": String(tampered)]).status == 422
        )
        #expect(
            try await client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": "MII" + String(repeating: "QUJD", count: 60)]
            ).status == 422)
        #expect(
            try await client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": receipt],
                secretOverride: "rgs_" + String(repeating: "x", count: 43)
            ).status == 401)
        #expect(
            try await client.post(
                "/iap/gateway/verify", json: ["receipt": forged, "product_id": "gems100", "os_id": 2]
            ).status == 422)
        let bearer = ["Authorization": "Bearer rgt_" + String(repeating: "y", count: 43)]
        #expect(try await RawHTTP.request(port: client.port, path: "/admin/webhooks", headers: bearer).status == 401)
        #expect(
            try await RawHTTP.request(
                port: client.port, method: "POST", path: "/v1/notifications/app-store",
                body: Data(#"{"signedPayload":"\#(forged)"}"#.utf8)
            ).status == 401)
        let rotated = try await harness.service.clients.rotateSecret(client.clientID)
        #expect(rotated.hasPrefix("rgs_"))

        let lines = harness.log.captured
        #expect(lines.count >= 8, "the service logged \(lines.count) lines; the scan would prove nothing")
        #expect(ServerLogScan.findings(in: lines).isEmpty, "\(ServerLogScan.findings(in: lines))")
    }
}
