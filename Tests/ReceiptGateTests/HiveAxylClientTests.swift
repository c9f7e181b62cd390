import AppStoreTestSupport
import Foundation
import HiveAxyl
import ReceiptGate
import TestSupport
import Testing

/// A client written from Hive Axyl's contract alone (Python, standard library) against the real service:
/// the happy path, then a wrong app id and a missing token.
@Suite struct HiveAxylSeedClient {
    @Test func aClientWrittenFromTheSeedWorks() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let account = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000140001", "appAccountToken": account]))
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Python/hiveaxyl_client.py"
        ).path
        let result = try await ChildProcess.run(
            "/usr/bin/python3", [script],
            environment: [
                "PATH": "/usr/bin:/bin", "HIVE_BASE_URL": "http://127.0.0.1:\(harness.client.port)",
                "HIVE_CLIENT_ID": caller.clientID,
                "HIVE_CLIENT_SECRET": caller.secret, "HIVE_APP_ID": HiveAxylCaller.appID, "HIVE_RECEIPT": receipt,
                "HIVE_PRODUCT_ID": "gems.100",
                "HIVE_ACCOUNT_UUID": account,
            ])
        #expect(result.status == 0, "python failed: \(result.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "stdout: \(result.stdout)")

        let token = try #require(report["token"] as? [String: Any])
        #expect(token["token_type"] as? String == "Bearer")
        #expect(token["expires_in"] as? Int == 3600)
        #expect(report["purchase_status"] as? Int == 200)
        let purchase = try #require((report["purchase"] as? [String: Any])?["data"] as? [String: Any])
        #expect(purchase["hiveAxylAccountUuidCompare"] as? Int == 1)
        #expect(purchase["hiveAxylProductId"] as? String == "gems.100")
        #expect(purchase["hiveAxylPrice"] as? Double == 0.99)
        #expect(report["deliver"] as? Bool == true)
        #expect(
            report["deliver_restore"] as? Bool == false,
            "a restore of a delivered purchase is duplicated: not delivered twice")

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

/// The `receiptgate` binary: `--app-id` on `client create/update`, the token lifetime variable,
/// and the routes served by `receiptgate serve` with what the CLI set.
@Suite struct HiveAxylCommandLine {
    @Test func appIdsFromTheCommandLineGateTheServedRoutes() async throws {
        var environment = try await Binary.databaseEnvironment()
        let created = try await Binary.run(
            [
                "client", "create", "--name", "Hive game", "--bundle-id", "com.example.game",
                "--app-id", "com.example.hive", "--app-id", "com.example.hive2",
            ], environment)
        #expect(created.status == 0, "\(created.stderr)")
        let client = try Binary.json(created.stdout)
        #expect(
            (client["settings"] as? [String: Any])?["hiveaxyl.app_ids"] as? [String] == [
                "com.example.hive", "com.example.hive2",
            ])
        let id = try #require(client["client_id"] as? String)
        let secret = try #require(client["client_secret"] as? String)

        let updated = try await Binary.run(["client", "update", id, "--app-id", "com.example.hive"], environment)
        #expect(
            (try Binary.json(updated.stdout)["settings"] as? [String: Any])?["hiveaxyl.app_ids"] as? [String] == [
                "com.example.hive"
            ])
        #expect(try await Binary.run(["client", "update", id, "--app-id", "not an id"], environment).status == 2)
        #expect(try await Binary.run(["client", "--help"], environment).stdout.contains("--app-id ID"))

        // A bad token lifetime stops start-up, naming the variable.
        let refused = try await Binary.run(
            ["serve"], environment.merging(["RECEIPTGATE_HIVEAXYL_TOKEN_SECONDS": "5", "RECEIPTGATE_PORT": "0"]) { $1 })
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("RECEIPTGATE_HIVEAXYL_TOKEN_SECONDS"))

        environment["RECEIPTGATE_PORT"] = "0"
        environment["RECEIPTGATE_HIVEAXYL_TOKEN_SECONDS"] = "600"
        let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(environment))
        let line = try await server.waitForStderrLine(containing: "\"listening\"")
        let port = try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? ""))
        let caller = HiveAxylCaller(port: port, clientID: id, secret: secret)
        let issued = try await caller.tokenResponse(basic: true)
        #expect(try issued.json()["expires_in"] as? Int == 600)
        let token = try #require(try issued.json()["access_token"] as? String)
        let body = HiveAxylCaller.purchase("not-a-receipt")
        #expect(
            try await caller.verify("/payment/v1/purchase/verify", body, token: token, appID: "com.example.hive2")
                .status == 403, "removed by update")
        let known = try await caller.verify(
            "/payment/v1/purchase/verify", body, token: token, appID: "com.example.hive")
        #expect(known.status == 422, "past the app id check, the receipt is refused: \(known.text)")
        #expect(known.hiveCode == 4220)
        server.send(SIGINT)
        #expect(try await server.wait(timeout: .seconds(30)) == 0)
    }

    /// Hive Axyl's contract leaves test purchases to the app (`hiveAxylPurchaseTest: "Y"`): a client made for
    /// Hive (`--app-id`) without `--environments` gets a sandbox purchase answered 100 with "Y";
    /// one made with `--environments production` has refused sandbox and gets 412 / 4120.
    @Test func sandboxPurchasesAreAcceptedUnlessTheClientRefusesThem() async throws {
        var environment = try await Binary.databaseEnvironment()
        let pki = try AppleTestPKI()
        let root = TestDatabase.temporaryDirectory("hive-sandbox").appendingPathComponent("root.der")
        try pki.root.derEncoded.write(to: root)
        environment["RECEIPTGATE_APPLE_ROOT_CERTS"] = root.path
        func create(_ extra: [String]) async throws -> (id: String, secret: String, environments: [String]?) {
            let created = try await Binary.run(
                [
                    "client", "create", "--name", "Hive game", "--bundle-id", "com.example.game",
                    "--app-id", HiveAxylCaller.appID,
                ] + extra, environment)
            #expect(created.status == 0, "\(created.stderr)")
            let client = try Binary.json(created.stdout)
            return (
                try #require(client["client_id"] as? String), try #require(client["client_secret"] as? String),
                client["environments"] as? [String]
            )
        }
        let accepting = try await create([])
        #expect(accepting.environments == ["production", "sandbox"])
        let refusing = try await create(["--environments", "production"])
        #expect(refusing.environments == ["production"])
        let plain = try await Binary.run(
            ["client", "create", "--name", "Not Hive", "--bundle-id", "com.example.other"], environment)
        #expect(
            try Binary.json(plain.stdout)["environments"] as? [String] == ["production"],
            "without --app-id the default stays production")

        environment["RECEIPTGATE_PORT"] = "0"
        let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(environment))
        let line = try await server.waitForStderrLine(containing: "\"listening\"")
        let port = try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? ""))
        for (client, transactionID) in [(accepting, "2000000000160001"), (refusing, "2000000000160002")] {
            let caller = HiveAxylCaller(port: port, clientID: client.id, secret: client.secret)
            let token = try #require(
                try await caller.tokenResponse(json: ["clientId": client.id, "clientSecret": client.secret]).json()[
                    "access_token"] as? String)
            let sandbox = try pki.sign(AppleTestPKI.transaction(["transactionId": transactionID]))
            let answer = try await caller.verify(
                "/payment/v1/purchase/verify", HiveAxylCaller.purchase(sandbox), token: token)
            if client.id == accepting.id {
                #expect(answer.status == 200, "\(answer.text)")
                #expect(answer.hiveCode == 100)
                #expect(answer.hiveData?["hiveAxylPurchaseTest"] as? String == "Y")
            } else {
                #expect(answer.status == 412, "\(answer.text)")
                #expect(answer.hiveCode == 4120)
                #expect(try answer.json()["data"] is NSNull)
            }
        }
        server.send(SIGINT)
        #expect(try await server.wait(timeout: .seconds(30)) == 0)
    }
}
