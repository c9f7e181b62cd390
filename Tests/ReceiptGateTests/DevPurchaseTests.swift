import Foundation
import TestSupport
import Testing

/// `receiptgate dev purchase`: a signed StoreKit 2 transaction that a service accepts only when
/// it was started trusting the development root, and never with Apple's.
@Suite struct DevPurchaseCommand {
    /// `receiptgate serve` as a child process on a free port; the port is read from its log.
    static func serve(_ environment: [String: String]) async throws -> (server: ChildProcess, port: Int) {
        let server = try ChildProcess.launch(
            Binary.path, ["serve"],
            environment: Binary.environment(environment.merging(["RECEIPTGATE_PORT": "0"]) { $1 }))
        let line = try await server.waitForStderrLine(containing: "\"listening\"")
        let port = try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? ""))
        return (server, port)
    }

    static func payload(ofJWS token: String) throws -> [String: Any] {
        let parts = token.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        try #require(parts.count == 3, "not a compact JWS: \(token.prefix(80))")
        var segment = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        segment += String(repeating: "=", count: (4 - segment.count % 4) % 4)
        let bytes = try #require(Data(base64Encoded: segment))
        return try #require(try JSONSerialization.jsonObject(with: bytes) as? [String: Any])
    }

    @Test func onlyAServiceTrustingTheDevelopmentRootAcceptsIt() async throws {
        let environment = try await Binary.databaseEnvironment()
        let dataDirectory = try #require(environment["RECEIPTGATE_DATA_DIR"])
        let created = try await Binary.run(
            [
                "client", "create", "--name", "dev", "--bundle-id", "com.example.devgame",
                "--environments", "sandbox,production",
            ], environment)
        let client = try Binary.json(created.stdout)
        let clientID = try #require(client["client_id"] as? String),
            secret = try #require(client["client_secret"] as? String)

        let purchase = try await Binary.run(
            ["dev", "purchase", "--bundle-id", "com.example.devgame", "--product-id", "gems.100"], environment)
        #expect(purchase.status == 0, "stderr: \(purchase.stderr)")
        let root = dataDirectory + "/dev-pki/root.pem"
        #expect(
            purchase.stderr.split(separator: "\n").contains { $0 == "RECEIPTGATE_APPLE_ROOT_CERTS=\(root)" },
            "stderr: \(purchase.stderr)")
        let keyMode = try #require(
            try FileManager.default.attributesOfItem(atPath: dataDirectory + "/dev-pki/leaf-key.pem")[.posixPermissions]
                as? Int)
        #expect(keyMode == 0o600)
        let transactionID = try #require(try Self.payload(ofJWS: purchase.stdout)["transactionId"] as? String)
        #expect(transactionID.count == 16 && transactionID.allSatisfy(\.isNumber))

        let (trusting, trustingPort) = try await Self.serve(
            environment.merging(["RECEIPTGATE_APPLE_ROOT_CERTS": root]) { $1 })
        let accepted = try await SignedClient(port: trustingPort, clientID: clientID, secret: secret)
            .post(
                "/v1/verify",
                json: ["store": "app_store", "receipt": purchase.stdout.trimmingCharacters(in: .newlines)])
        #expect(accepted.status == 200, "\(accepted.text)")
        let transaction = try #require(try accepted.json()["transaction"] as? [String: Any])
        #expect(transaction["transaction_id"] as? String == transactionID)
        #expect(transaction["product_id"] as? String == "gems.100")
        #expect(transaction["environment"] as? String == "sandbox")
        #expect(transaction["type"] as? String == "consumable")
        trusting.send(SIGTERM)
        #expect(try await trusting.wait(timeout: .seconds(30)) == 0)

        // A second purchase is a new one, signed by the same chain, and Apple's root refuses it.
        let second = try await Binary.run(
            ["dev", "purchase", "--bundle-id", "com.example.devgame", "--product-id", "gems.100"], environment)
        #expect(try Self.payload(ofJWS: second.stdout)["transactionId"] as? String != transactionID)
        let (apple, applePort) = try await Self.serve(environment)
        let refused = try await SignedClient(port: applePort, clientID: clientID, secret: secret)
            .post(
                "/v1/verify", json: ["store": "app_store", "receipt": second.stdout.trimmingCharacters(in: .newlines)])
        #expect(refused.status == 422, "\(refused.text)")
        #expect(try refused.json()["error"] as? String == "VERIFICATION_FAILED")
        apple.send(SIGTERM)
        #expect(try await apple.wait(timeout: .seconds(30)) == 0)
    }

    @Test func flagsShapeThePurchase() async throws {
        let environment = ["RECEIPTGATE_DATA_DIR": TestDatabase.temporaryDirectory("dev-flags").path]
        let result = try await Binary.run(
            [
                "dev", "purchase", "--bundle-id", "com.example.devgame", "--product-id", "vip.monthly",
                "--transaction-id", "1234567890123456", "--type", "auto_renewable", "--environment", "production",
            ],
            environment)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let payload = try Self.payload(ofJWS: result.stdout)
        #expect(payload["transactionId"] as? String == "1234567890123456")
        #expect(payload["productId"] as? String == "vip.monthly")
        #expect(payload["type"] as? String == "Auto-Renewable Subscription")
        #expect(payload["environment"] as? String == "Production")
        let now = Date().timeIntervalSince1970 * 1000
        #expect(((payload["expiresDate"] as? NSNumber)?.doubleValue ?? 0) > now)
    }

    @Test(arguments: [
        ["dev"], ["dev", "sell"], ["dev", "purchase"], ["dev", "purchase", "--bundle-id", "com.example.game"],
        ["dev", "purchase", "--product-id", "gems.100"],
        ["dev", "purchase", "--bundle-id", "com.example.game", "--product-id", "gems.100", "--type", "gift"],
        ["dev", "purchase", "--bundle-id", "com.example.game", "--product-id", "gems.100", "--environment", "xcode"],
        ["dev", "purchase", "--bundle-id", "com.example.game", "--product-id", "gems.100", "--transaction-id", "12ab"],
        ["dev", "purchase", "--bundle-id", "com example", "--product-id", "gems.100"],
        ["dev", "purchase", "--bundle-id", "com.example.game", "--product-id", "gems.100", "--bogus", "1"],
    ])
    func badFlagsAreOneLineAndExitTwo(_ arguments: [String]) async throws {
        let directory = TestDatabase.temporaryDirectory("dev-usage")
        let result = try await Binary.run(arguments, ["RECEIPTGATE_DATA_DIR": directory.path])
        #expect(result.status == 2)
        #expect(result.stderr.split(separator: "\n").count == 1, "stderr was: \(result.stderr)")
        #expect(result.stdout.isEmpty)
        // A mistake writes nothing: no PKI appears for a command that did not run.
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("dev-pki").path))
    }

    @Test func helpSaysItIsNeverAcceptedWithApplesRoot() async throws {
        let result = try await Binary.run(["dev", "purchase", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("RECEIPTGATE_APPLE_ROOT_CERTS"))
        #expect(result.stdout.contains("refuses"))
    }
}
