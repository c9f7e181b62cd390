import AppStore
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

/// App data against Apple's library: notifications whose `appData` replaces `data`
/// (`RESCIND_CONSENT`, App Store Server Notifications 2.19) and signed app transactions, each
/// signed by the test PKI, must get the same verdict and the same decoded fields from ReceiptGate
/// and from `appstoreserverlibrary` (Oracle/decode_app_data_with_apple_library.py). A
/// notification's nested app transaction is judged too, as both verify it before reading it.
@Suite struct AppDataAgainstApplesLibrary {
    typealias Case = DifferentialAgainstApplesLibrary.Case
    /// Field name to value as text, nil when absent: what both sides are compared on.
    typealias Fields = [String: String?]

    struct Verdict: Equatable, CustomStringConvertible {
        var accepted: Bool
        var fields: Fields?
        /// For a notification: the nested app transaction's verdict and fields.
        var nestedAccepted: Bool?
        var nestedFields: Fields?
        var description: String {
            "accepted \(accepted) \(fields.map(String.init(describing:)) ?? "-") nested \(nestedAccepted.map(String.init) ?? "-") \(nestedFields.map(String.init(describing:)) ?? "-")"
        }
    }

    static func appTransaction(
        _ overrides: [String: any Sendable] = [:], environment: String = "Sandbox"
    ) -> [String: any Sendable] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var payload: [String: any Sendable] = [
            "receiptType": environment, "bundleId": "com.example.game", "appAppleId": 1234,
            "applicationVersion": "42", "originalApplicationVersion": "1", "receiptCreationDate": now,
            "originalPurchaseDate": now - 86_400_000 * 400, "appTransactionId": "704289575718046473",
            "originalPlatform": "iOS",
        ]
        for (key, value) in overrides { payload[key] = value }
        return payload
    }

    static func notification(
        type: String = "RESCIND_CONSENT", appData: [String: any Sendable]
    ) -> [String: any Sendable] {
        [
            "notificationType": type, "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": Int64(Date().timeIntervalSince1970 * 1000), "appData": appData,
        ]
    }

    static func corpus() throws -> [Case] {
        let pki = try AppleTestPKI(), stranger = try AppleTestPKI()
        var cases: [Case] = []
        func add(
            _ id: String, _ token: String, kind: String, bundle: String = "com.example.game",
            environment: AppStoreEnvironment = .sandbox, appAppleID: Int64? = nil
        ) {
            cases.append(
                Case(
                    id: id, kind: kind, token: token, root: pki.root, bundleID: bundle, environment: environment,
                    appAppleID: appAppleID))
        }
        func appData(
            _ appTransaction: String?, bundle: String = "com.example.game", environment: String = "Sandbox",
            appAppleID: Int64 = 1234
        ) -> [String: any Sendable] {
            var data: [String: any Sendable] = [
                "bundleId": bundle, "environment": environment, "appAppleId": appAppleID,
            ]
            if let appTransaction { data["signedAppTransactionInfo"] = appTransaction }
            return data
        }
        let genuine = try pki.sign(appTransaction())
        let production = try pki.sign(appTransaction(environment: "Production"))
        add("rescind-consent", try pki.sign(notification(appData: appData(genuine))), kind: "notification")
        add(
            "rescind-consent-production",
            try pki.sign(notification(appData: appData(production, environment: "Production"))),
            kind: "notification", environment: .production, appAppleID: 1234)
        add(
            "rescind-consent-production-other-app-apple-id",
            try pki.sign(notification(appData: appData(production, environment: "Production", appAppleID: 99))),
            kind: "notification", environment: .production, appAppleID: 1234)
        add(
            "rescind-consent-other-bundle", try pki.sign(notification(appData: appData(genuine, bundle: "com.other"))),
            kind: "notification")
        add(
            "rescind-consent-other-environment", try pki.sign(notification(appData: appData(genuine))),
            kind: "notification", environment: .production, appAppleID: 1234)
        add(
            "rescind-consent-forged-app-transaction",
            try pki.sign(notification(appData: appData(try stranger.sign(appTransaction())))), kind: "notification")
        add(
            "rescind-consent-app-transaction-of-another-app",
            try pki.sign(notification(appData: appData(try pki.sign(appTransaction(["bundleId": "com.other"]))))),
            kind: "notification")
        add(
            "rescind-consent-without-app-transaction", try pki.sign(notification(appData: appData(nil))),
            kind: "notification")
        add(
            "later-type-in-app-data-shape",
            try pki.sign(notification(type: "SOMETHING_LATER", appData: appData(genuine))), kind: "notification")
        add(
            "rescind-consent-by-stranger", try stranger.sign(notification(appData: appData(genuine))),
            kind: "notification")
        add("app-transaction", genuine, kind: "app_transaction")
        add(
            "app-transaction-unknown-platform", try pki.sign(appTransaction(["originalPlatform": "Future OS"])),
            kind: "app_transaction")
        add(
            "app-transaction-production", production, kind: "app_transaction", environment: .production,
            appAppleID: 1234)
        add(
            "app-transaction-production-other-app-apple-id", production, kind: "app_transaction",
            environment: .production, appAppleID: 77)
        add("app-transaction-other-bundle", genuine, kind: "app_transaction", bundle: "com.other")
        add("app-transaction-by-stranger", try stranger.sign(appTransaction()), kind: "app_transaction")
        var undated = appTransaction()
        undated["receiptType"] = nil
        add("app-transaction-without-environment", try pki.sign(undated), kind: "app_transaction")
        let parts = genuine.split(separator: ".").map(String.init)
        let inflated = Base64.urlEncode(
            try JSONSerialization.data(
                withJSONObject: appTransaction(["appTransactionId": "1"]), options: [.sortedKeys]))
        add("app-transaction-tampered", "\(parts[0]).\(inflated).\(parts[2])", kind: "app_transaction")
        return cases
    }

    static func fields(_ transaction: AppTransaction) -> Fields {
        [
            "appTransactionId": transaction.appTransactionId, "bundleId": transaction.bundleId,
            "appAppleId": transaction.appAppleId.map(String.init), "receiptType": transaction.receiptType?.rawValue,
            "applicationVersion": transaction.applicationVersion,
            "originalApplicationVersion": transaction.originalApplicationVersion,
            "originalPurchaseDate": transaction.originalPurchaseDate.map { String($0.milliseconds) },
            "receiptCreationDate": transaction.receiptCreationDate.map { String($0.milliseconds) },
            "originalPlatform": transaction.originalPlatform,
        ]
    }

    static func ours(_ testCase: Case) -> Verdict {
        let verifier = AppStoreSignedDataVerifier(trustRoots: [testCase.root])
        let expectations = AppStoreExpectations(
            bundleIDs: [testCase.bundleID], environments: [testCase.environment], appAppleID: testCase.appAppleID)
        if testCase.kind == "app_transaction" {
            guard let transaction = try? verifier.verifyAppTransaction(testCase.token, expecting: expectations) else {
                return Verdict(accepted: false)
            }
            return Verdict(accepted: true, fields: fields(transaction))
        }
        guard let notification = try? verifier.verifyNotification(testCase.token, expecting: expectations) else {
            return Verdict(accepted: false)
        }
        let appData = notification.appData
        var verdict = Verdict(
            accepted: true,
            fields: [
                "notificationType": notification.notificationType?.rawValue,
                "notificationUUID": notification.notificationUUID,
                "hasData": notification.data != nil ? "true" : "false",
                "bundleId": appData?.bundleId, "appAppleId": appData?.appAppleId.map(String.init),
                "environment": appData?.environment?.rawValue,
            ])
        if let nested = appData?.signedAppTransactionInfo {
            let transaction = try? verifier.verifyAppTransaction(nested, expecting: expectations)
            verdict.nestedAccepted = transaction != nil
            verdict.nestedFields = transaction.map(fields)
        }
        return verdict
    }

    @Test(
        .enabled(
            if: DifferentialAgainstApplesLibrary.oraclePython != nil
                || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to run Apple's library as the oracle"))
    func everyVerdictAndDecodedFieldMatchesApplesLibrary() async throws {
        let cases = try Self.corpus()
        let theirs = try await Self.oracle(cases)
        #expect(theirs.count == cases.count, "the oracle judged \(theirs.count) of \(cases.count) cases")
        var accepted = 0, nested = 0
        for testCase in cases {
            guard let verdict = theirs[testCase.id] else { continue }
            let ours = Self.ours(testCase)
            #expect(ours == verdict, "\(testCase.id): ReceiptGate \(ours), Apple's library \(verdict)")
            if ours.accepted { accepted += 1 }
            if ours.nestedAccepted == false { nested += 1 }
        }
        // Both verdicts, and nested refusals, must be exercised, or agreement would mean nothing.
        #expect(accepted >= 6)
        #expect(cases.count - accepted >= 6)
        #expect(nested >= 2)
    }

    static func oracle(_ cases: [Case]) async throws -> [String: Verdict] {
        let python = try #require(
            DifferentialAgainstApplesLibrary.oraclePython, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        let input = TestDatabase.temporaryDirectory("oracle-app-data").appendingPathComponent("corpus.jsonl")
        var lines = ""
        for testCase in cases {
            var object: [String: Any] = [
                "id": testCase.id, "kind": testCase.kind, "token": testCase.token,
                "root": testCase.root.derEncoded.base64EncodedString(), "bundle_id": testCase.bundleID,
                "environment": testCase.environment.rawValue,
            ]
            if let appAppleID = testCase.appAppleID { object["app_apple_id"] = appAppleID }
            lines += String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self) + "\n"
        }
        try lines.write(to: input, atomically: true, encoding: .utf8)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Oracle/decode_app_data_with_apple_library.py"
        ).path
        let result = try await ChildProcess.run(
            "/bin/sh", ["-c", "exec \"$0\" \"$1\" < \"$2\"", python, script, input.path],
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"])
        #expect(result.status == 0, "oracle failed: \(result.stderr.suffix(2000))")
        var theirs: [String: Verdict] = [:]
        for line in result.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            var verdict = Verdict(
                accepted: try #require(object["accepted"] as? Bool), fields: Self.fields(object["fields"]))
            if let nested = object["app_transaction"] as? [String: Any] {
                verdict.nestedAccepted = nested["accepted"] as? Bool
                verdict.nestedFields = Self.fields(nested["fields"])
            }
            theirs[try #require(object["id"] as? String)] = verdict
        }
        return theirs
    }

    /// The oracle's fields, each a string or null.
    static func fields(_ value: Any?) -> Fields? {
        guard let object = value as? [String: Any] else { return nil }
        return object.mapValues { $0 as? String }
    }
}
