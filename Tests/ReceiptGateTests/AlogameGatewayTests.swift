import AlogameGateway
import AppStore
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The Alogame gateway contract's /iap/gateway/verify, driven by a Node.js client written from the contract's example.
@Suite struct AlogameGatewayVerify {
    struct Gateway {
        let harness: VerifyHarness

        static func start(
            environments: [StoreEnvironment],
            appStore: @escaping (AppleTestPKI) -> AppStoreConfiguration? = { _ in nil },
            deliveryURL: String? = nil
        ) async throws -> Gateway {
            Gateway(
                harness: try await VerifyHarness.start(
                    environments: environments, outbox: VerifyHarness.fastOutbox(), deliveryURL: deliveryURL,
                    dialects: [AlogameGateway()], appStore: appStore))
        }

        /// Runs the Node client; returns each response's status and JSON body.
        func node(
            _ body: String, timestampShift: Int = 0, sendTwice: Bool = false, secret: String? = nil
        ) async throws -> [(Int, [String: Any])] {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "Node/alogame_client.mjs"
            ).path
            let result = try await ChildProcess.run(
                "/usr/bin/node", [script],
                environment: [
                    "PATH": "/usr/bin:/bin", "GATEWAY_URL": "http://127.0.0.1:\(harness.client.port)",
                    "CLIENT_ID": harness.client.clientID,
                    "CLIENT_SECRET": secret ?? harness.client.secret, "BODY": body,
                    "TIMESTAMP_SHIFT": String(timestampShift),
                    "SEND_TWICE": sendTwice ? "1" : "0", "NODE_NO_WARNINGS": "1",
                ])
            #expect(result.status == 0, "node failed: \(result.stderr)")
            return try result.stdout.split(separator: "\n").map { line in
                let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                return (try #require(object["status"] as? Int), object["body"] as? [String: Any] ?? [:])
            }
        }

        func json(_ fields: [String: Any]) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: fields), as: UTF8.self)
        }
    }

    @Test func successThenDuplicateExactlyAsTheSeedSays() async throws {
        let gateway = try await Gateway.start(environments: [.production, .sandbox])
        defer { gateway.harness.stop() }
        let receipt = try gateway.harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000100000000", "originalTransactionId": "2000000100000000",
                "productId": "gems100",
                "storefront": "VNM", "price": 10000, "currency": "VND", "purchaseDate": Int64(1_716_389_123_000),
            ]))
        let body = try gateway.json([
            "receipt": receipt, "product_id": "gems100", "os_id": 2, "player_id": "player-001",
            "character_id": "char-001", "server_id": "server-1", "game_version": "1.0.0",
        ])
        let first = try await gateway.node(body)
        #expect(first.count == 1)
        let (status, json) = first[0]
        #expect(status == 200)
        #expect(json["success"] as? Bool == true)
        #expect(json["transaction_id"] as? String == "2000000100000000")
        #expect(json["product_id"] as? String == "gems100")
        let info = try #require(json["receipt_info"] as? [String: Any])
        #expect(
            Set(info.keys) == [
                "platform", "environment", "quantity", "purchase_date_ms", "original_transaction_id", "type",
                "storefront", "price", "currency", "in_app_ownership_type",
            ])
        #expect(info["platform"] as? String == "ios")
        #expect(info["environment"] as? String == "Sandbox")
        #expect(info["quantity"] as? Int == 1)
        #expect(info["purchase_date_ms"] as? Int == 1_716_389_123_000)
        #expect(info["original_transaction_id"] as? String == "2000000100000000")
        #expect(info["type"] as? String == "Consumable")
        #expect(info["storefront"] as? String == "VNM")
        #expect(info["price"] as? Int == 10000)
        #expect(info["currency"] as? String == "VND")
        #expect(info["in_app_ownership_type"] as? String == "PURCHASED")

        // The same receipt again, freshly signed (a timestamp a second on, so not the same signature): 409, as the Alogame SDK expects.
        let again = try await gateway.node(body, timestampShift: 1)
        #expect(again[0].0 == 409)
        #expect(again[0].1["success"] as? Bool == false)
        #expect(again[0].1["error"] as? String == "DUPLICATE_TRANSACTION")
        // player/server ids were recorded.
        let row = try await gateway.harness.pool.query("SELECT player_id, character_id, server_id FROM transactions")[0]
        #expect(try row.decode("player_id", as: String.self) == "player-001")
        #expect(try row.decode("server_id", as: String.self) == "server-1")
        await gateway.harness.service.shutdown()
    }

    @Test func everyRowOfTheSeedsErrorTable() async throws {
        let receiptRoot = try TestReceipts.signingPKI().root
        // StoreKit 1 receipts of the test PKI are genuine here, but there is no way to confirm them with Apple.
        let gateway = try await Gateway.start(environments: [.production]) { pki in
            var configuration = AppStoreConfiguration(trustRoots: [pki.root])
            configuration.receiptTrustRoots = [receiptRoot]
            return configuration
        }
        defer { gateway.harness.stop() }
        let pki = gateway.harness.pki
        let production = try pki.sign(AppleTestPKI.transaction(["environment": "Production", "productId": "gems100"]))
        let sandbox = try pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000000777", "productId": "gems100"]))
        let cases: [(String, Int, String)] = [
            (try gateway.json(["receipt": production, "product_id": "gems500", "os_id": 2]), 422, "PRODUCT_MISMATCH"),
            (try gateway.json(["receipt": sandbox, "product_id": "gems100", "os_id": 2]), 412, "ENVIRONMENT_MISMATCH"),
            (
                try gateway.json([
                    "receipt": try AppleTestPKI().sign(AppleTestPKI.transaction(["environment": "Production"])),
                    "product_id": "gems.100", "os_id": 2,
                ]),
                422, "VERIFICATION_FAILED"
            ),
            (
                try gateway.json(["receipt": "not a receipt", "product_id": "gems100", "os_id": 2]), 422,
                "VERIFICATION_FAILED"
            ),
            (try gateway.json(["product_id": "gems100", "os_id": 2]), 400, "MISSING_FIELDS"),
            (try gateway.json(["receipt": production, "os_id": 2]), 400, "MISSING_FIELDS"),
            (try gateway.json(["receipt": production, "product_id": "gems100"]), 400, "MISSING_FIELDS"),
            (try gateway.json(["receipt": production, "product_id": "gems100", "os_id": 3]), 400, "INVALID_OS_ID"),
            (try gateway.json(["receipt": production, "product_id": "gems100", "os_id": "2"]), 400, "INVALID_OS_ID"),
            (try gateway.json(["receipt": production, "product_id": "gems100", "os_id": true]), 400, "INVALID_OS_ID"),
            (try gateway.json(["receipt": production, "product_id": "gems100", "os_id": 1]), 400, "INVALID_OS_ID"),
            ("{\"receipt\": ", 400, "MISSING_FIELDS"),
            // A StoreKit 1 receipt that cannot be confirmed with Apple right now (no way to ask): 502, safe to retry.
            (
                try gateway.json([
                    "receipt": try TestReceipts.sign(TestReceipts.payload(type: "Production"), streamed: false),
                    "product_id": "gems.100", "os_id": 2,
                ]),
                502, "VERIFIER_ERROR"
            ),
            // A StoreKit 1 receipt signed outside the configured receipt roots: refused before anyone is asked.
            (
                try gateway.json([
                    "receipt": try TestReceipts.sign(
                        TestReceipts.payload(type: "Production"), streamed: false, pki: try AppleTestPKI()),
                    "product_id": "gems.100", "os_id": 2,
                ]), 422, "VERIFICATION_FAILED"
            ),
        ]
        for (body, status, code) in cases {
            let response = try await gateway.node(body)[0]
            #expect(response.0 == status, "\(code): got \(response.0) \(response.1)")
            #expect(response.1["success"] as? Bool == false)
            #expect(response.1["error"] as? String == code, "\(response.1)")
            #expect(response.1["message"] is String)
        }
        let valid = try gateway.json(["receipt": production, "product_id": "gems100", "os_id": 2])
        let wrongSecret = try await gateway.node(valid, secret: "not-the-secret")[0]
        #expect(wrongSecret.0 == 401)
        #expect(wrongSecret.1["error"] as? String == "UNAUTHORIZED")
        #expect(try await gateway.node(valid, timestampShift: -301)[0].0 == 401)
        // Ahead by a margin: a slow machine's delay between signing and checking eats into it.
        #expect(try await gateway.node(valid, timestampShift: 305)[0].0 == 401)
        // A retry is not a replay: the very same signed request again (an HTTP retry after a
        // timeout, the same second) is answered as the contract answers a receipt seen before.
        let again = try gateway.json([
            "receipt": try gateway.harness.pki.sign(
                AppleTestPKI.transaction(
                    [
                        "transactionId": "2000000000009999", "originalTransactionId": "2000000000009999",
                        "productId": "gems100", "environment": "Production",
                    ])),
            "product_id": "gems100", "os_id": 2,
        ])
        let retried = try await gateway.node(again, sendTwice: true)
        #expect(retried.map(\.0) == [200, 409])
        #expect(retried[1].1["error"] as? String == "DUPLICATE_TRANSACTION")
        await gateway.harness.service.shutdown()
    }

    @Test func storeKit1SuccessLeavesWhatSK1CannotSayNull() async throws {
        let fake = try FakeVerifyReceipt()
        let receiptRoot = try TestReceipts.signingPKI().root
        let gateway = try await Gateway.start(environments: [.sandbox]) { pki in
            fake.appStoreConfiguration(trusting: pki, receiptRoot: receiptRoot)
        }
        defer { gateway.harness.stop() }
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        let (status, json) = try await gateway.node(
            try gateway.json(["receipt": receipt, "product_id": "gems.100", "os_id": 2]))[0]
        #expect(status == 200, "\(json)")
        #expect(json["transaction_id"] as? String == "2000000000000501")
        let info = try #require(json["receipt_info"] as? [String: Any])
        #expect(info["environment"] as? String == "Sandbox")
        #expect(info["quantity"] as? Int == 1)
        #expect(info["purchase_date_ms"] as? Int == 1_760_597_486_000)
        #expect(info["original_transaction_id"] as? String == "2000000000000501")
        for key in ["type", "storefront", "price", "currency", "in_app_ownership_type"] {
            #expect(info[key] is NSNull, "\(key) should be null for SK1")
        }
        await gateway.harness.service.shutdown()
        await fake.shutdown()
    }

    @Test func serverAuthoritativeDeliveryHappensOncePerTransaction() async throws {
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let gateway = try await Gateway.start(environments: [.sandbox], deliveryURL: receiver.url)
        defer { gateway.harness.stop() }
        receiver.secret.set(gateway.harness.client.secret)
        let receipt = try gateway.harness.pki.sign(AppleTestPKI.transaction(["productId": "gems100"]))
        let body = try gateway.json(["receipt": receipt, "product_id": "gems100", "os_id": 2, "player_id": "hero"])
        #expect(try await gateway.node(body)[0].0 == 200)
        #expect(try await gateway.node(body, timestampShift: 1)[0].0 == 409)
        try await OutboxDrain.wait(gateway.harness.pool)
        #expect(receiver.acknowledged.count == 1, "a duplicate verification must never deliver twice")
        #expect(receiver.acknowledged.first?.type == "entitlement.delivery")
        #expect(receiver.acknowledged.first?.transactionID == "2000000111111111")
        #expect(receiver.acknowledged.first?.signatureValid == true)
        await gateway.harness.service.shutdown()
        await receiver.server.shutdown()
    }

    @Test func allowSandboxIsTheClientsEnvironments() async throws {
        let gateway = try await Gateway.start(environments: [.production, .sandbox])
        defer { gateway.harness.stop() }
        let sandbox = try gateway.harness.pki.sign(AppleTestPKI.transaction(["productId": "gems100"]))
        let response = try await gateway.node(
            try gateway.json(["receipt": sandbox, "product_id": "gems100", "os_id": 2]))[0]
        #expect(response.0 == 200)
        await gateway.harness.service.shutdown()
    }
}

/// The Alogame gateway contract's refund callback: from a signed App Store notification to a signed callback that
/// the Alogame contract's own `verifyAlogameSignature` (run by Node) accepts.
@Suite struct AlogameRefundCallbacks {
    @Test func aRefundReachesTheGameServerSignedAsTheSeedSays() async throws {
        let gateway = try await AlogameGatewayVerify.Gateway.start(environments: [.production, .sandbox])
        defer { gateway.harness.stop() }
        let harness = gateway.harness
        let port = try RawHTTP.freePort()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Node/refund_receiver.mjs"
        ).path
        let receiver = try ChildProcess.launch(
            "/usr/bin/node", [script],
            environment: [
                "PATH": "/usr/bin:/bin", "PORT": String(port), "CLIENT_ID": harness.client.clientID,
                "CLIENT_SECRET": harness.client.secret,
            ])
        let listening = ContinuousClock.now + .seconds(60)
        while !receiver.stdout.contains("listening"), ContinuousClock.now < listening {
            try await Task.sleep(for: .milliseconds(50))
        }
        var settings = ClientSettings()
        settings.refundCallbackURL = "http://127.0.0.1:\(port)/alogame/refund"
        _ = try await harness.service.clients.update(harness.client.clientID, settings)

        let id = "2000000100000000"
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id, "productId": "gems100"]))
        #expect(
            try await gateway.node(try gateway.json(["receipt": receipt, "product_id": "gems100", "os_id": 2]))[0].0
                == 200)
        let revokedAt = Int64(1_736_510_400_000)
        #expect(
            try await NotificationsDriveTheLedger.notify(
                harness, type: "REFUND",
                transaction: [
                    "transactionId": id, "originalTransactionId": id, "productId": "gems100",
                    "revocationDate": revokedAt, "revocationReason": 0,
                ]
            ).status == 200)

        // Until the callback arrives (bounded: a retried delivery on a loaded machine takes seconds).
        var calls: [[String: Any]] = []
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            calls = receiver.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            .filter { $0["verified"] != nil }
            if !calls.isEmpty { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(calls.count == 1)
        let call = try #require(calls.first)
        #expect(
            call["verified"] as? Bool == true, "the Alogame contract's verifyAlogameSignature refused our signature")
        let body = try #require(call["body"] as? [String: Any])
        #expect(Set(body.keys) == ["transaction_id", "product_id", "revocation_date", "revocation_reason", "game_id"])
        #expect(body["transaction_id"] as? String == id)
        #expect(body["product_id"] as? String == "gems100")
        #expect(body["revocation_date"] as? Int == Int(revokedAt))
        #expect(body["revocation_reason"] as? Int == 0)
        #expect(body["game_id"] as? Int == 42)
        receiver.send(SIGKILL)
        _ = try await receiver.wait(timeout: .seconds(10))
        await harness.service.shutdown()
    }

    @Test func withoutACallbackURLTheRefundIsStillRecorded() async throws {
        let gateway = try await AlogameGatewayVerify.Gateway.start(environments: [.sandbox])
        defer { gateway.harness.stop() }
        let id = "2000000100000001"
        #expect(
            try await NotificationsDriveTheLedger.notify(
                gateway.harness, type: "REFUND",
                transaction: [
                    "transactionId": id, "revocationDate": Int64(Date().timeIntervalSince1970 * 1000),
                ]
            ).status == 200)
        #expect(
            try await NotificationsDriveTheLedger.transaction(gateway.harness, id)["state"] as? String == "refunded")
        #expect(try await gateway.harness.count("outbox") == 0)
        await gateway.harness.service.shutdown()
    }
}
