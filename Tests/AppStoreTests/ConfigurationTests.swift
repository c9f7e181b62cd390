import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

@testable import AppStore

@Suite struct AppStoreSettings {
    static func p8() throws -> String {
        let path = TestDatabase.temporaryDirectory("p8-config").appendingPathComponent("AuthKey.p8").path
        try PrivateKey.generateP256().pemRepresentation().write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func nothingConfiguredMeansApplesRootAndNoReceiptConfirmation() throws {
        let configuration = try AppStoreConfiguration.fromEnvironment([:])
        #expect(configuration.trustRoots == [try AppleRootCertificates.appleRoot()])
        #expect(configuration.receiptTrustRoots == [try AppleRootCertificates.appleReceiptRoot()])
        #expect(configuration.receiptMode == nil)
        #expect(!configuration.onlineChecks)
        #expect(try AppStoreProvider.fromEnvironment([:]).receiptValidator(bundleID: "com.x") == nil)
    }

    @Test func anAPIKeySelectsTheServerAPI() throws {
        let environment = [
            "RECEIPTGATE_APPSTORE_API_KEY_ID": "K1", "RECEIPTGATE_APPSTORE_API_ISSUER_ID": "I1",
            "RECEIPTGATE_APPSTORE_API_KEY_PATH": try Self.p8(),
            "RECEIPTGATE_APPSTORE_API_SANDBOX_URL": "http://127.0.0.1:9/",
        ]
        let configuration = try AppStoreConfiguration.fromEnvironment(environment)
        #expect(configuration.receiptMode == .serverAPI)
        #expect(configuration.serverAPISandboxURL == "http://127.0.0.1:9")
        let provider = try AppStoreProvider.fromEnvironment(environment)
        guard case .serverAPI(let client)? = provider.receiptValidator(bundleID: "com.example.game")?.mode else {
            Issue.record("expected the server API mode")
            return
        }
        #expect(client.configuration.bundleID == "com.example.game")
        #expect(client.configuration.keyID == "K1")
    }

    @Test func aSharedSecretSelectsVerifyReceipt() throws {
        let configuration = try AppStoreConfiguration.fromEnvironment(["RECEIPTGATE_APPSTORE_SHARED_SECRET": "abc"])
        #expect(configuration.receiptMode == .verifyReceipt)
        #expect(try AppStoreConfiguration.fromEnvironment(["RECEIPTGATE_APPLE_ONLINE_CHECKS": "on"]).onlineChecks)
    }

    @Test func badSettingsNameTheirVariable() throws {
        let cases: [([String: String], String)] = [
            (["RECEIPTGATE_APPSTORE_API_KEY_ID": "K1"], "RECEIPTGATE_APPSTORE_API_ISSUER_ID"),
            (
                [
                    "RECEIPTGATE_APPSTORE_API_KEY_ID": "K1", "RECEIPTGATE_APPSTORE_API_ISSUER_ID": "I",
                    "RECEIPTGATE_APPSTORE_API_KEY_PATH": "/missing.p8",
                ],
                "RECEIPTGATE_APPSTORE_API_KEY_PATH"
            ),
            (["RECEIPTGATE_APPSTORE_RECEIPT_MODE": "server_api"], "RECEIPTGATE_APPSTORE_RECEIPT_MODE"),
            (["RECEIPTGATE_APPSTORE_RECEIPT_MODE": "magic"], "RECEIPTGATE_APPSTORE_RECEIPT_MODE"),
            (
                ["RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_SANDBOX_URL": "ftp://x"],
                "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_SANDBOX_URL"
            ),
            (["RECEIPTGATE_APPLE_ONLINE_CHECKS": "maybe"], "RECEIPTGATE_APPLE_ONLINE_CHECKS"),
            (["RECEIPTGATE_APPLE_ROOT_CERTS": "/missing.der"], "RECEIPTGATE_APPLE_ROOT_CERTS"),
            (["RECEIPTGATE_APPLE_RECEIPT_ROOT_CERTS": "/missing.der"], "RECEIPTGATE_APPLE_RECEIPT_ROOT_CERTS"),
        ]
        for (environment, variable) in cases {
            do {
                _ = try AppStoreConfiguration.fromEnvironment(environment)
                Issue.record("\(environment) was accepted")
            } catch let invalid as AppStoreConfiguration.Invalid {
                #expect(invalid.variable == variable, "\(environment) blamed \(invalid.variable)")
            }
        }
    }
}
