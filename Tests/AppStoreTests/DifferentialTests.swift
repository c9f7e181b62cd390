import AppStore
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

/// Our verifier and Apple's official Python library judge the same corpus of genuine and forged
/// tokens; any accept/reject disagreement fails. The oracle's Python comes from
/// RECEIPTGATE_ORACLE_PYTHON, which scripts/test.sh (and so CI) always sets up.
@Suite struct DifferentialAgainstApplesLibrary {
    static let oraclePython = ProcessInfo.processInfo.environment["RECEIPTGATE_ORACLE_PYTHON"]

    struct Case {
        let id: String
        let kind: String
        let token: String
        let root: Certificate
        let bundleID: String
        let environment: AppStoreEnvironment
        let appAppleID: Int64?
        /// Judged with online checks on (OCSP, certificates valid now).
        var online = false
    }

    static func corpus() throws -> [Case] {
        let pki = try AppleTestPKI(), stranger = try AppleTestPKI()
        var noLeafMarker = AppleTestPKI.Options(); noLeafMarker.leafMarker = false
        var noIntermediateMarker = AppleTestPKI.Options(); noIntermediateMarker.intermediateMarker = false
        var expiring = AppleTestPKI.Options()
        expiring.validFrom = Date(timeIntervalSince1970: 1_600_000_000)
        expiring.leafValidUntil = Date(timeIntervalSince1970: 1_700_000_000)
        let withoutLeafMarker = try AppleTestPKI(noLeafMarker),
            withoutIntermediateMarker = try AppleTestPKI(noIntermediateMarker)
        let expired = try AppleTestPKI(expiring)

        let valid = try pki.sign(AppleTestPKI.transaction())
        let parts = valid.split(separator: ".").map(String.init)
        var signature = try #require(Base64.urlDecode(parts[2]))
        let twin = signature.prefix(32) + P256Order.negate(Data(signature.suffix(32)))
        signature[3] ^= 0x01
        let inflated = Base64.urlEncode(
            try JSONSerialization.data(
                withJSONObject: AppleTestPKI.transaction(["quantity": 50]), options: [.sortedKeys]))
        let hmacHeader = Base64.urlEncode(try JSONSerialization.data(withJSONObject: ["alg": "HS256", "x5c": pki.x5c]))
        var undated = AppleTestPKI.transaction()
        undated["signedDate"] = nil

        var cases: [Case] = []
        func add(
            _ id: String, _ token: String, root: Certificate? = nil, bundle: String = "com.example.game",
            environment: AppStoreEnvironment = .sandbox, kind: String = "transaction", appAppleID: Int64? = nil
        ) {
            cases.append(
                Case(
                    id: id, kind: kind, token: token, root: root ?? pki.root, bundleID: bundle,
                    environment: environment, appAppleID: appAppleID))
        }
        add("valid", valid)
        add("valid-undated", try pki.sign(undated))
        add(
            "valid-production", try pki.sign(AppleTestPKI.transaction(["environment": "Production"])),
            environment: .production, appAppleID: 1234)
        add("valid-high-s-twin", "\(parts[0]).\(parts[1]).\(Base64.urlEncode(twin))")
        add("valid-unknown-enum", try pki.sign(AppleTestPKI.transaction(["type": "Future Type", "offerType": 42])))
        add(
            "valid-notification",
            try pki.sign([
                "notificationType": "REFUND", "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
                "signedDate": Int64(Date().timeIntervalSince1970 * 1000),
                "data": ["environment": "Sandbox", "bundleId": "com.example.game", "signedTransactionInfo": valid]
                    as [String: any Sendable],
            ]), kind: "notification")
        add(
            "valid-app-transaction",
            try pki.sign([
                "receiptType": "Sandbox", "bundleId": "com.example.game", "appAppleId": 1234,
                "receiptCreationDate": Int64(Date().timeIntervalSince1970 * 1000),
            ]), kind: "app_transaction")
        add(
            "expired-leaf-but-signed-in-time",
            try expired.sign(AppleTestPKI.transaction(["signedDate": Int64(1_650_000_000_000)])), root: expired.root)
        add("tampered-payload", "\(parts[0]).\(inflated).\(parts[2])")
        add("tampered-signature", "\(parts[0]).\(parts[1]).\(Base64.urlEncode(signature))")
        add("truncated-signature", "\(parts[0]).\(parts[1]).\(Base64.urlEncode(signature.prefix(63)))")
        add("wrong-root", try stranger.sign(AppleTestPKI.transaction()))
        add(
            "spoofed-third-entry",
            try stranger.sign(AppleTestPKI.transaction(), x5c: [stranger.x5c[0], stranger.x5c[1], pki.x5c[2]]))
        add("missing-leaf-oid", try withoutLeafMarker.sign(AppleTestPKI.transaction()), root: withoutLeafMarker.root)
        add(
            "missing-intermediate-oid", try withoutIntermediateMarker.sign(AppleTestPKI.transaction()),
            root: withoutIntermediateMarker.root)
        add(
            "expired-leaf", try expired.sign(AppleTestPKI.transaction(["signedDate": Int64(1_700_000_100_000)])),
            root: expired.root)
        add("expired-leaf-undated", try expired.sign(undated), root: expired.root)
        add("alg-none", try pki.sign(AppleTestPKI.transaction(), alg: "none"))
        add(
            "alg-hs256-with-hmac",
            "\(hmacHeader).\(parts[1]).\(Base64.urlEncode(try HMACSHA256.authenticationCode(key: pki.root.derEncoded, message: Data("\(hmacHeader).\(parts[1])".utf8))))"
        )
        add("alg-hs256", try pki.sign(AppleTestPKI.transaction(), alg: "HS256"))
        add("two-segments", "\(parts[0]).\(parts[1])")
        add("four-segments", valid + ".AAAA")
        add("bad-base64-payload", "\(parts[0]).\(parts[1].dropLast(2))*&.\(parts[2])")
        add("bad-base64-header", "\(parts[0])%.\(parts[1]).\(parts[2])")
        add("wrong-bundle", valid, bundle: "com.example.other")
        add("wrong-environment", valid, environment: .production, appAppleID: 1234)
        add("chain-of-2", try pki.sign(AppleTestPKI.transaction(), x5c: Array(pki.x5c.prefix(2))))
        add("chain-of-4", try pki.sign(AppleTestPKI.transaction(), x5c: pki.x5c + [pki.x5c[2]]))
        add("chain-of-1", try pki.sign(AppleTestPKI.transaction(), x5c: [pki.x5c[0]]))
        add(
            "leaf-signed-by-root-directly",
            try AppleTestPKI.sign(
                payloadBytes: Data(try JSONSerialization.data(withJSONObject: AppleTestPKI.transaction())),
                header: ["alg": "ES256", "x5c": [pki.x5c[2], pki.x5c[1], pki.x5c[2]]], key: pki.rootKey))
        add(
            "notification-wrong-bundle",
            try pki.sign([
                "notificationType": "TEST", "notificationUUID": UUID().uuidString.lowercased(),
                "data": ["environment": "Sandbox", "bundleId": "com.example.other"] as [String: any Sendable],
            ]), kind: "notification")
        add("garbage", "this is not a token")
        return cases
    }

    static func ourVerdict(_ testCase: Case) -> Bool {
        let verifier = AppStoreSignedDataVerifier(trustRoots: [testCase.root])
        let expectations = AppStoreExpectations(
            bundleIDs: [testCase.bundleID], environments: [testCase.environment], appAppleID: testCase.appAppleID)
        do {
            switch testCase.kind {
            case "notification": _ = try verifier.verifyNotification(testCase.token, expecting: expectations)
            case "app_transaction": _ = try verifier.verifyAppTransaction(testCase.token, expecting: expectations)
            default: _ = try verifier.verifyTransaction(testCase.token, expecting: expectations)
            }
            return true
        } catch {
            return false
        }
    }

    @Test(
        .enabled(
            if: oraclePython != nil || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to run Apple's library as the oracle"))
    func everyVerdictMatchesApplesLibrary() async throws {
        let cases = try Self.corpus()
        let theirs = try await Self.oracleVerdicts(cases)
        #expect(theirs.count == cases.count, "the oracle judged \(theirs.count) of \(cases.count) cases")
        var accepted = 0
        for testCase in cases {
            let ours = Self.ourVerdict(testCase)
            guard let verdict = theirs[testCase.id] else { continue }
            #expect(
                ours == verdict.accepted,
                "\(testCase.id): ReceiptGate \(ours ? "accepts" : "rejects"), Apple's library \(verdict.accepted ? "accepts" : "rejects") (\(verdict.status))"
            )
            if ours { accepted += 1 }
        }
        // The corpus must exercise both verdicts, or agreement would mean nothing.
        #expect(accepted >= 5)
        #expect(cases.count - accepted >= 20)
    }

    /// Apple's library's verdict on each case, by id.
    static func oracleVerdicts(_ cases: [Case]) async throws -> [String: (accepted: Bool, status: String)] {
        let python = try #require(Self.oraclePython, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        let directory = TestDatabase.temporaryDirectory("oracle")
        let input = directory.appendingPathComponent("corpus.jsonl")
        var lines = ""
        for testCase in cases {
            var object: [String: Any] = [
                "id": testCase.id, "kind": testCase.kind, "token": testCase.token,
                "root": testCase.root.derEncoded.base64EncodedString(),
                "bundle_id": testCase.bundleID, "environment": testCase.environment.rawValue,
            ]
            if let appAppleID = testCase.appAppleID { object["app_apple_id"] = appAppleID }
            if testCase.online { object["online"] = true }
            lines += String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self) + "\n"
        }
        try lines.write(to: input, atomically: true, encoding: .utf8)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Oracle/verify_with_apple_library.py"
        ).path
        let result = try await ChildProcess.run(
            "/bin/sh", ["-c", "exec \"$0\" \"$1\" < \"$2\"", python, script, input.path],
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"])
        #expect(result.status == 0, "oracle failed: \(result.stderr.suffix(2000))")

        var theirs: [String: (accepted: Bool, status: String)] = [:]
        for line in result.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            theirs[try #require(object["id"] as? String)] = (
                try #require(object["accepted"] as? Bool), object["status"] as? String ?? ""
            )
        }
        return theirs
    }
}
