import AppStoreTestSupport
import Foundation
import TestSupport
import Testing

/// A client written only from the account-linking contract (Python/iap_seed_client.py, standard library) against the
/// real service: the SDK headers filled as free text the way an app fills them, flows d and a,
/// a repeat purchase with the account-link contract's `x-forwarded-for` example, and a broken body answered 4xx.
@Suite struct AccountLinkSeedClient {
    @Test func aClientWrittenFromTheSeedWorksUnchanged() async throws {
        let harness = try await AccountLinkEndToEnd.start()
        defer { harness.stop() }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Python/iap_seed_client.py"
        ).path
        let result = try await ChildProcess.run(
            "/usr/bin/python3",
            [
                script, "http://127.0.0.1:\(harness.client.port)", "com.example.game",
                try AccountLinkEndToEnd.subscription(harness, "2000000000170001"),
                try AccountLinkEndToEnd.subscription(harness, "2000000000170002"),
            ], environment: ["PATH": "/usr/bin:/bin"])
        #expect(result.status == 0, "the contract's client failed: \(result.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "stdout: \(result.stdout)")
        #expect(report["ok"] as? Bool == true)
        #expect(try await harness.count("accounts") == 1)
    }
}
