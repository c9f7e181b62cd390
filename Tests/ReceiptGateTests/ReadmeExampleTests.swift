import Foundation
import Testing
import AppStoreTestSupport
import TestSupport

/// The README's curl + openssl example, run as written against a running service.
@Suite struct ReadmeExample {
    static func exampleScript(_ name: String = "verify-example") throws -> String {
        let readme = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let start = try #require(text.range(of: "<!-- \(name):start -->\n```sh\n"))
        let end = try #require(text.range(of: "```\n<!-- \(name):end -->"))
        return String(text[start.upperBound..<end.lowerBound])
    }

    @Test func theCurlExampleVerifiesAPurchase() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let receipt = try harness.pki.sign(AppleTestPKI.transaction())
        var script = try Self.exampleScript()
        // Only the placeholders change; the signing lines run exactly as documented.
        script = script.replacingOccurrences(of: #"CLIENT_ID="rgc_...""#, with: #"CLIENT_ID="\#(harness.client.clientID)""#)
            .replacingOccurrences(of: #"CLIENT_SECRET="rgs_...""#, with: #"CLIENT_SECRET="\#(harness.client.secret)""#)
            .replacingOccurrences(of: #"RECEIPT="eyJhbGciOiJFUzI1NiIs...""#, with: #"RECEIPT="\#(receipt)""#)
        let result = try await ChildProcess.run("/bin/bash", ["-c", "set -euo pipefail\n" + script],
                                                environment: ["PATH": "/usr/bin:/bin", "RECEIPTGATE_URL": "http://127.0.0.1:\(harness.client.port)"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "stdout: \(result.stdout)")
        #expect(json["status"] as? String == "verified")
        #expect((json["transaction"] as? [String: Any])?["transaction_id"] as? String == "2000000111111111")
        await harness.service.shutdown()
    }

    @Test func theSignedReadExampleReadsAPlayersPage() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let receipt = try harness.pki.sign(AppleTestPKI.transaction())
        #expect(try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "player-42"]).status == 200)
        let script = try Self.exampleScript("read-example")
            .replacingOccurrences(of: #"CLIENT_ID="rgc_...""#, with: #"CLIENT_ID="\#(harness.client.clientID)""#)
            .replacingOccurrences(of: #"CLIENT_SECRET="rgs_...""#, with: #"CLIENT_SECRET="\#(harness.client.secret)""#)
        let result = try await ChildProcess.run("/bin/bash", ["-c", "set -euo pipefail\n" + script],
                                                environment: ["PATH": "/usr/bin:/bin", "RECEIPTGATE_URL": "http://127.0.0.1:\(harness.client.port)"])
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "stdout: \(result.stdout)")
        #expect((json["transactions"] as? [[String: Any]])?.first?["transaction_id"] as? String == "2000000111111111")
        await harness.service.shutdown()
    }
}
