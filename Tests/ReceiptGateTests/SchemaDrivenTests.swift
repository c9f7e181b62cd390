import AppStore
import AppStoreTestSupport
import Foundation
import Plugins
import ReceiptCore
import TestSupport
import Testing

/// schemathesis (PyPI, installed by scripts/test.sh) generates requests for every operation of
/// Deploy/openapi.yaml from the document's own constraints and sends them to a running service as
/// a real, signed client: no answer may be a 5xx, and every answer must be documented and match
/// its schema. A short run here (bounded examples); scripts/schemathesis.sh runs a long one.
@Suite struct SchemaDriven {
    static let python = ProcessInfo.processInfo.environment["RECEIPTGATE_ORACLE_PYTHON"]
    static let inCI = ProcessInfo.processInfo.environment["CI"] != nil
    /// Examples per operation and generation mode (`RECEIPTGATE_SCHEMATHESIS_EXAMPLES`, default 25;
    /// scripts/schemathesis.sh raises it).
    static let examples = ProcessInfo.processInfo.environment["RECEIPTGATE_SCHEMATHESIS_EXAMPLES"] ?? "25"

    static let hasSchemathesis: Bool = {
        guard let python else { return false }
        // Looked up on disk, not by starting Python: this runs while other tests are running, and
        // importing schemathesis takes seconds that would stall the cooperative pool they share.
        let lib = URL(fileURLWithPath: python).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("lib")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []
        return versions.contains {
            FileManager.default.fileExists(atPath: lib.appendingPathComponent("\($0)/site-packages/schemathesis").path)
        }
    }()

    @Test(
        .enabled(
            if: hasSchemathesis || inCI,
            "schemathesis is not installed: set RECEIPTGATE_ORACLE_PYTHON to scripts/test.sh's venv (.build/oracle-venv/bin/python)"
        ),
        .timeLimit(.minutes(120)))
    func generatedRequestsGetNo5xxAndDocumentedAnswers() async throws {
        let python = try #require(Self.python, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        #expect(Self.hasSchemathesis, "schemathesis is not importable by \(python)")
        let admin = String(repeating: "s", count: 32)
        // The support lookup asks a local fake of the App Store Server API.
        let apple = try FakeAppStoreServerAPI()
        // Every registered plugin is served, as by the binary; the App Store asks the fake above.
        let plain = PluginEnvironment(variables: [:])
        let harness = try await VerifyHarness.start(
            environments: [.sandbox], adminToken: admin,
            dialects: try Plugins.all.dialects.map { try $0.start(plain) },
            otherStores: try Plugins.all.stores.filter { $0.declaration.store != .appStore }.map {
                try $0.start(plain)
            },
            pki: apple.pki
        ) { pki in
            var appStore = AppStoreConfiguration(trustRoots: [pki.root])
            appStore.serverAPIKey = .init(
                keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID, privateKey: apple.teamKey)
            appStore.serverAPIProductionURL = "http://127.0.0.1:\(apple.production.port)"
            appStore.serverAPISandboxURL = "http://127.0.0.1:\(apple.sandbox.port)"
            return appStore
        }
        defer { harness.stop(); Task.detached { await apple.shutdown() } }
        // Something for the read routes to find.
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000005501", "productId": "gems100"]))
        #expect(
            try await harness.client.post(
                "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "p1"]
            ).status == 200)

        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let spec = try AssembledOpenAPI.file("schema-driven")
        let result = try await ChildProcess.run(
            python,
            [
                here.appendingPathComponent("Conformance/schemathesis_run.py").path, spec,
                "http://127.0.0.1:\(harness.client.port)", harness.client.clientID, harness.client.secret,
                admin, Self.examples, "--negative",
            ],
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"],
            // Only a guard against a hang: on two busy cores the run's 1,500 requests took over
            // three minutes, and it ends as soon as they are answered.
            timeout: .seconds(1_200))
        #expect(result.status == 0, "\(result.stdout.suffix(6000))\(result.stderr.suffix(2000))")
        #expect(
            result.stdout.contains("schemathesis: ") && result.stdout.contains(" 0 failures"),
            "\(result.stdout.suffix(2000))")
        // What was sent and answered, per operation (scripts/schemathesis.sh reports it).
        print(result.stdout.split(separator: "\n").filter { $0.hasPrefix("schemathesis:") }.joined(separator: "\n"))
    }
}
