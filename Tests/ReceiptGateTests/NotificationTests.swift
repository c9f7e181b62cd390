import AppStore
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// App Store Server Notifications V2 end to end: signed by a test PKI the service is told to
/// trust, posted over HTTP, recorded in Postgres.
@Suite struct AppStoreNotifications {
    struct Harness {
        let harness: VerifyHarness
        var service: Service { harness.service }
        var pool: PostgresPool { harness.pool }
        var pki: AppleTestPKI { harness.pki }

        static func start() async throws -> Harness {
            Harness(harness: try await VerifyHarness.start())
        }

        func post(_ body: String) async throws -> RawHTTP.Response {
            try await RawHTTP.request(
                port: service.port, method: "POST", path: "/v1/notifications/app-store",
                headers: ["Content-Type": "application/json"], body: Data(body.utf8))
        }

        func rows() async throws -> Int { try await harness.count("store_notifications") }
    }

    static func notification(
        _ pki: AppleTestPKI, uuid: String = UUID().uuidString.lowercased(), type: String = "REFUND",
        bundle: String = "com.example.game"
    ) throws -> String {
        let transaction = try pki.sign(
            AppleTestPKI.transaction([
                "revocationDate": Int64(Date().timeIntervalSince1970 * 1000), "revocationReason": 1,
            ]))
        let payload = try pki.sign([
            "notificationType": type, "notificationUUID": uuid, "version": "2.0",
            "signedDate": Int64(Date().timeIntervalSince1970 * 1000),
            "data": [
                "environment": "Sandbox", "bundleId": bundle, "appAppleId": 99, "signedTransactionInfo": transaction,
            ] as [String: any Sendable],
        ])
        return #"{"signedPayload":"\#(payload)"}"#
    }

    @Test func signedBodiesKeepTheirCertificateChainOnceAndComeBackByteForByte() async throws {
        let harness = try await Harness.start()
        defer { harness.harness.stop() }
        var sent: [String: String] = [:]
        for _ in 0..<3 {
            let uuid = UUID().uuidString.lowercased()
            sent[uuid] = try Self.notification(harness.pki, uuid: uuid)
            #expect(try await harness.post(sent[uuid]!).status == 200)
        }
        let rows = try await harness.pool.query(
            "SELECT id, notification_id, length(raw_body) AS size, raw_format FROM store_notifications")
        #expect(rows.count == 3)
        var stored = 0
        for row in rows {
            let id: Int64 = try row.decode("id")
            let original = try #require(sent[try row.decode("notification_id", as: String.self)])
            #expect(try row.decode("raw_format", as: Int.self) == 1)
            #expect(try await harness.service.repositories.notifications.rawBody(id: id) == Data(original.utf8))
            stored += try row.decode("size", as: Int.self)
        }
        let originals = sent.values.reduce(0) { $0 + $1.utf8.count }
        // The notification's and its transaction's headers carry the same chain: one piece for all.
        #expect(try await harness.harness.count("raw_body_pieces") == 1)
        #expect(stored * 3 < originals, "\(stored) bytes kept for \(originals) sent")
        await harness.service.shutdown()
    }

    @Test func aGenuineNotificationIsRecordedOnce() async throws {
        let harness = try await Harness.start()
        defer { harness.harness.stop() }
        let uuid = UUID().uuidString.lowercased()
        let body = try Self.notification(harness.pki, uuid: uuid)
        let first = try await harness.post(body)
        #expect(first.status == 200)
        #expect(try first.json()["duplicate"] as? Bool == false)
        #expect(try first.json()["notification_id"] as? String == uuid)
        let again = try await harness.post(body)
        #expect(again.status == 200)
        #expect(try again.json()["duplicate"] as? Bool == true)
        #expect(try await harness.rows() == 1)

        let row = try #require(
            try await harness.pool.query(
                """
                SELECT id, notification_type, environment, app_identifier, transaction_id, decoded->'transaction'->>'revocationReason' AS reason
                FROM store_notifications
                """
            ).first)
        #expect(try row.decode("notification_type", as: String.self) == "REFUND")
        #expect(try row.decode("environment", as: String.self) == "sandbox")
        #expect(try row.decode("app_identifier", as: String.self) == "com.example.game")
        #expect(try row.decode("transaction_id", as: String.self) == "2000000111111111")
        let kept = try await harness.service.repositories.notifications.rawBody(id: try row.decode("id"))
        #expect(kept == Data(body.utf8), "the body as Apple sent it, byte for byte")
        #expect(try row.decode("reason", as: String.self) == "1")
        await harness.service.shutdown()
    }

    @Test func forgedOrForeignNotificationsChangeNothing() async throws {
        let harness = try await Harness.start()
        defer { harness.harness.stop() }
        let forged = try await harness.post(try Self.notification(try AppleTestPKI()))
        #expect(forged.status == 401)
        #expect(try forged.json()["error"] as? String == "UNAUTHORIZED")
        #expect((try forged.json()["message"] as? String)?.hasPrefix("CERTIFICATE_CHAIN_NOT_TRUSTED") == true)

        let foreign = try await harness.post(try Self.notification(harness.pki, bundle: "com.someone.else"))
        #expect(foreign.status == 401)
        #expect((try foreign.json()["message"] as? String)?.hasPrefix("BUNDLE_ID_MISMATCH") == true)

        let genuine = try Self.notification(harness.pki)
        let tampered = genuine.replacingOccurrences(of: "\"}", with: "x\"}")
        #expect(try await harness.post(tampered).status == 401)

        for junk in ["", "{}", #"{"signedPayload": 5}"#, "not json"] {
            let response = try await harness.post(junk)
            #expect(response.status == 400, "\(junk) answered \(response.status)")
        }
        #expect(try await harness.rows() == 0)
        await harness.service.shutdown()
    }
}

@Suite struct AppleRootConfiguration {
    /// The binary trusts RECEIPTGATE_APPLE_ROOT_CERTS end to end, and refuses to start on a bad one.
    @Test func serveTrustsTheConfiguredRoot() async throws {
        let pki = try AppleTestPKI()
        let directory = TestDatabase.temporaryDirectory("roots-serve")
        let rootPath = directory.appendingPathComponent("root.der")
        try pki.root.derEncoded.write(to: rootPath)
        var environment = try await Binary.databaseEnvironment()
        let created = try await Binary.run(
            [
                "client", "create", "--name", "g", "--bundle-id", "com.example.game",
                "--environments", "sandbox",
            ], environment)
        #expect(created.status == 0)

        // Several times: the other stores' HTTP workers are new when start-up stops, and the exit
        // must not race them (it once crashed one start in twenty).
        for _ in 0..<20 {
            let broken = try await Binary.run(
                ["serve"], environment.merging(["RECEIPTGATE_APPLE_ROOT_CERTS": "/missing.der"]) { $1 })
            #expect(broken.status == 78)
            #expect(broken.stderr.contains("RECEIPTGATE_APPLE_ROOT_CERTS"))
            if broken.status != 78 { break }
        }

        environment["RECEIPTGATE_APPLE_ROOT_CERTS"] = rootPath.path
        environment["RECEIPTGATE_PORT"] = "0"
        let server = try ChildProcess.launch(Binary.path, ["serve"], environment: Binary.environment(environment))
        let line = try await server.waitForStderrLine(containing: "\"listening\"")
        let port = try #require(Int((try Binary.json(line)["url"] as? String)?.split(separator: ":").last ?? ""))
        let body = try AppStoreNotifications.notification(pki)
        let response = try await RawHTTP.request(
            port: port, method: "POST", path: "/v1/notifications/app-store", body: Data(body.utf8))
        #expect(response.status == 200, "\(response.text)")
        // Apple's real root is not trusted now: the configured one replaced it.
        server.send(SIGTERM)
        #expect(try await server.wait(timeout: .seconds(30)) == 0)
        #expect(!server.stderr.contains(body.prefix(200)), "the payload is not logged")
    }
}
