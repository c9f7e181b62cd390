import AppStore
import AppStoreTestSupport
import Foundation
import TestSupport
import Testing

/// The shapes App Store Server API 1.16–1.21 added to transactions and renewal infos (offer codes
/// for every product kind, Advanced Commerce, commitment plans), signed by the test PKI, judged and
/// decoded by ReceiptGate and by Apple's app-store-server-library (Oracle/decode_with_apple_library.py):
/// the same verdict, and field for field the same decoding, unknown enumerated values kept raw on
/// both sides. RECEIPTGATE_ORACLE_PYTHON names the Python with the library, as for
/// `DifferentialAgainstApplesLibrary`.
@Suite struct CommerceShapesAgainstApplesLibrary {
    struct Case {
        let id: String
        /// `transaction` or `renewal`.
        let kind: String
        let token: String
    }

    static let now = Int64(Date().timeIntervalSince1970 * 1000)
    static let day: Int64 = 86_400_000

    /// A consumable bought with an offer code, outside the app and with no account token.
    static let offerCodeConsumable: [String: any Sendable] = [
        "type": "Consumable", "productId": "gems.500", "offerType": 3, "offerIdentifier": "SPRING-GEMS",
        "offerDiscountType": "ONE_TIME", "price": 0, "appTransactionId": "704289572283212345",
    ]

    static let advancedCommerce: [String: any Sendable] = [
        "type": "Non-Consumable", "productId": "com.example.game.ac.bundle",
        "advancedCommerceInfo": [
            "requestReferenceId": "5e2d0b52-1111-4c4e-9a11-bb6a0a1f0001", "taxCode": "C003-00-2",
            "taxExclusivePrice": 4990, "taxRate": "0.0825", "estimatedTax": 412,
            "descriptors": ["description": "A bundle of three swords", "displayName": "Sword bundle"],
            "items": [
                [
                    "SKU": "sword.fire", "displayName": "Fire sword", "description": "Burns", "price": 1990,
                    "refunds": [
                        [
                            "refundAmount": 1990, "refundDate": now - 3_600_000, "refundReason": "UNINTENDED_PURCHASE",
                            "refundType": "FULL",
                        ] as [String: any Sendable]
                    ] as [any Sendable],
                    "revocationDate": now - 3_600_000,
                ] as [String: any Sendable],
                ["SKU": "sword.ice", "displayName": "Ice sword", "description": "Freezes", "price": 1990]
                    as [String: any Sendable],
                [
                    "SKU": "sword.wind", "displayName": "Wind sword", "description": "Blows", "price": 1010,
                    "offer": ["period": "P1M", "periodCount": 1, "price": 990, "reason": "ACQUISITION"]
                        as [String: any Sendable],
                    "refunds": [
                        ["refundAmount": 500, "refundType": "A_TYPE_APPLE_ADDS_LATER"] as [String: any Sendable]
                    ]
                        as [any Sendable],
                ] as [String: any Sendable],
            ] as [any Sendable],
        ] as [String: any Sendable],
    ]

    /// The third monthly payment of a 12-month commitment.
    static let commitmentPeriod: [String: any Sendable] = [
        "type": "Auto-Renewable Subscription", "productId": "pass.yearly", "subscriptionGroupIdentifier": "21000001",
        "expiresDate": now + 20 * day, "webOrderLineItemId": "2000000099990003", "billingPlanType": "MONTHLY",
        "commitmentInfo": [
            "billingPeriodNumber": 3, "totalBillingPeriods": 12, "commitmentExpiresDate": now + 270 * day,
            "commitmentPrice": 119_880,
        ] as [String: any Sendable],
    ]

    static func renewal(_ overrides: [String: any Sendable]) -> [String: any Sendable] {
        var payload: [String: any Sendable] = [
            "originalTransactionId": "2000000111111111", "autoRenewProductId": "pass.yearly",
            "productId": "pass.yearly",
            "autoRenewStatus": 0, "signedDate": now, "environment": "Sandbox", "renewalDate": now + 20 * day,
            "recentSubscriptionStartDate": now - 60 * day, "currency": "USD", "renewalPrice": 9990,
        ]
        for (key, value) in overrides { payload[key] = value }
        return payload
    }

    static func corpus(_ pki: AppleTestPKI) throws -> [Case] {
        var cases: [Case] = []
        func transaction(_ id: String, _ overrides: [String: any Sendable]) throws {
            cases.append(Case(id: id, kind: "transaction", token: try pki.sign(AppleTestPKI.transaction(overrides))))
        }
        func renewal(_ id: String, _ overrides: [String: any Sendable]) throws {
            cases.append(Case(id: id, kind: "renewal", token: try pki.sign(Self.renewal(overrides))))
        }
        try transaction("offer-code-consumable", offerCodeConsumable)
        try transaction(
            "offer-code-non-renewing",
            [
                "type": "Non-Renewing Subscription", "offerType": 3, "offerDiscountType": "ONE_TIME",
                "offerPeriod": "P1M",
            ])
        try transaction(
            "offer-unknown-values",
            ["offerType": 99, "offerDiscountType": "A_DISCOUNT_APPLE_ADDS_LATER", "offerIdentifier": "X"])
        try transaction("advanced-commerce", advancedCommerce)
        try transaction("advanced-commerce-empty", ["advancedCommerceInfo": [String: any Sendable]()])
        try transaction("commitment-monthly", commitmentPeriod)
        try transaction("commitment-unknown-plan", ["billingPlanType": "A_PLAN_APPLE_ADDS_LATER"])
        try transaction("commitment-billed-upfront", ["billingPlanType": "BILLED_UPFRONT"])
        try renewal(
            "renewal-commitment",
            [
                "renewalBillingPlanType": "MONTHLY",
                "commitmentInfo": [
                    "commitmentAutoRenewProductId": "pass.yearly", "commitmentAutoRenewStatus": 0,
                    "commitmentRenewalBillingPlanType": "BILLED_UPFRONT",
                    "commitmentRenewalDate": now + 270 * day, "commitmentRenewalPrice": 99_990,
                ] as [String: any Sendable],
            ])
        try renewal(
            "renewal-unknown-values",
            [
                "renewalBillingPlanType": "A_PLAN_APPLE_ADDS_LATER", "offerType": 7,
                "commitmentInfo": ["commitmentAutoRenewStatus": 9, "commitmentRenewalBillingPlanType": "LATER"]
                    as [String: any Sendable],
            ])
        try renewal(
            "renewal-advanced-commerce",
            [
                "offerType": 3, "offerIdentifier": "CODE-1", "offerDiscountType": "PAY_UP_FRONT", "offerPeriod": "P3M",
                "advancedCommerceInfo": [
                    "consistencyToken": "token-1", "period": "P1M", "requestReferenceId": "ref-2",
                    "taxCode": "C003-00-2",
                    "descriptors": ["description": "Monthly pack", "displayName": "Pack"],
                    "items": [
                        [
                            "SKU": "pack.gold", "description": "Gold", "displayName": "Gold", "price": 4990,
                            "priceIncreaseInfo": [
                                "dependentSKUs": ["pack.silver"], "price": 5990, "status": "SCHEDULED",
                            ]
                                as [String: any Sendable],
                        ] as [String: any Sendable]
                    ] as [any Sendable],
                ] as [String: any Sendable],
            ])
        // Forged: the same shapes under another root are refused by both.
        let stranger = try AppleTestPKI()
        cases.append(
            Case(
                id: "forged-advanced-commerce", kind: "transaction",
                token: try stranger.sign(AppleTestPKI.transaction(advancedCommerce))))
        cases.append(Case(id: "forged-renewal", kind: "renewal", token: try stranger.sign(Self.renewal([:]))))
        return cases
    }

    /// ReceiptGate's decoding as JSON under Apple's names (the payloads' Encodable conformances), or nil if refused.
    static func ours(_ testCase: Case, pki: AppleTestPKI) -> Any? {
        let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root])
        let expectations = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox])
        let encoder = JSONEncoder()
        do {
            let data =
                testCase.kind == "renewal"
                ? try encoder.encode(verifier.verifyRenewalInfo(testCase.token, expecting: expectations))
                : try encoder.encode(verifier.verifyTransaction(testCase.token, expecting: expectations))
            return try JSONSerialization.jsonObject(with: data)
        } catch {
            return nil
        }
    }

    @Test(
        .enabled(
            if: DifferentialAgainstApplesLibrary.oraclePython != nil
                || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to run Apple's library as the oracle"))
    func everyNewShapeDecodesAsApplesLibraryDecodesIt() async throws {
        let pki = try AppleTestPKI()
        let cases = try Self.corpus(pki)
        let theirs = try await Self.oracle(cases, root: pki)
        #expect(theirs.count == cases.count, "the oracle answered \(theirs.count) of \(cases.count) cases")
        var agreedOnFields = 0
        for testCase in cases {
            guard let verdict = theirs[testCase.id] else { continue }
            let ours = Self.ours(testCase, pki: pki)
            #expect(
                (ours != nil) == verdict.accepted,
                "\(testCase.id): ReceiptGate \(ours != nil ? "accepts" : "refuses"), Apple's library \(verdict.accepted ? "accepts" : "refuses") (\(verdict.status))"
            )
            guard let ours = ours as? NSDictionary, let decoded = verdict.decoded as? NSDictionary else { continue }
            #expect(ours == decoded, "\(testCase.id): ReceiptGate decoded \(ours), Apple's library \(decoded)")
            if ours == decoded { agreedOnFields += 1 }
        }
        #expect(agreedOnFields == cases.count - 2, "every genuine shape compared field for field")
    }

    /// The library's verdict and decoding of each case, by id.
    static func oracle(
        _ cases: [Case], root pki: AppleTestPKI
    ) async throws -> [String: (accepted: Bool, status: String, decoded: Any?)] {
        let python = try #require(
            DifferentialAgainstApplesLibrary.oraclePython, "RECEIPTGATE_ORACLE_PYTHON must be set")
        let directory = TestDatabase.temporaryDirectory("commerce-oracle")
        let input = directory.appendingPathComponent("corpus.jsonl")
        var lines = ""
        for testCase in cases {
            let object: [String: Any] = [
                "id": testCase.id, "kind": testCase.kind, "token": testCase.token,
                "root": pki.root.derEncoded.base64EncodedString(), "bundle_id": "com.example.game",
                "environment": "Sandbox",
            ]
            lines += String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self) + "\n"
        }
        try lines.write(to: input, atomically: true, encoding: .utf8)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Oracle/decode_with_apple_library.py"
        ).path
        let result = try await ChildProcess.run(
            "/bin/sh", ["-c", "exec \"$0\" \"$1\" < \"$2\"", python, script, input.path],
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"])
        #expect(result.status == 0, "oracle failed: \(result.stderr.suffix(2000))")
        var theirs: [String: (accepted: Bool, status: String, decoded: Any?)] = [:]
        for line in result.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            theirs[try #require(object["id"] as? String)] = (
                try #require(object["accepted"] as? Bool), object["status"] as? String ?? "", object["decoded"]
            )
        }
        return theirs
    }
}
