import Foundation
import HiveAxyl
import ReceiptGate
import Testing
import AppStoreTestSupport
import TestSupport

/// A client written from seed 002 alone (Python, standard library) against the real service:
/// the happy path, then a wrong app id and a missing token.
@Suite struct HiveAxylSeedClient {
    @Test func aClientWrittenFromTheSeedWorks() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let account = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": "2000000000140001", "appAccountToken": account]))
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Python/hiveaxyl_client.py").path
        let result = try await ChildProcess.run("/usr/bin/python3", [script], environment: [
            "PATH": "/usr/bin:/bin", "HIVE_BASE_URL": "http://127.0.0.1:\(harness.client.port)", "HIVE_CLIENT_ID": caller.clientID,
            "HIVE_CLIENT_SECRET": caller.secret, "HIVE_APP_ID": HiveAxylCaller.appID, "HIVE_RECEIPT": receipt, "HIVE_PRODUCT_ID": "gems.100",
            "HIVE_ACCOUNT_UUID": account,
        ])
        #expect(result.status == 0, "python failed: \(result.stderr)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "stdout: \(result.stdout)")

        let token = try #require(report["token"] as? [String: Any])
        #expect(token["token_type"] as? String == "Bearer")
        #expect(token["expires_in"] as? Int == 3600)
        #expect(report["purchase_status"] as? Int == 200)
        let purchase = try #require((report["purchase"] as? [String: Any])?["data"] as? [String: Any])
        #expect(purchase["hiveAxylAccountUuidCompare"] as? Int == 1)
        #expect(purchase["hiveAxylProductId"] as? String == "gems.100")
        #expect(purchase["hiveAxylPrice"] as? Double == 0.99)
        #expect(report["deliver"] as? Bool == true)
        #expect(report["deliver_restore"] as? Bool == false, "a restore of a delivered purchase is duplicated: not delivered twice")

        let wrongApp = try #require(report["wrong_app"] as? [String: Any])
        #expect(wrongApp["status"] as? Int == 403)
        #expect(((wrongApp["body"] as? [String: Any])?["result"] as? [String: Any])?["code"] as? Int == 4030)
        let noToken = try #require(report["no_token"] as? [String: Any])
        #expect(noToken["status"] as? Int == 401)
        #expect(noToken["www_authenticate"] as? String == #"Bearer error="invalid_token""#)
        #expect(((noToken["body"] as? [String: Any])?["result"] as? [String: Any])?["code"] as? Int == 4010)
        #expect((noToken["body"] as? [String: Any])?["data"] is NSNull)
        await harness.service.shutdown()
    }
}
