import AppStoreTestSupport
import Foundation
import HiveAxyl
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// The Hive Axyl routes' real responses, checked against Deploy/openapi.yaml by the same
/// independent validator as the rest of the surface (Conformance/validate_responses.py).
@Suite struct HiveAxylConformance {
    @Test(
        .enabled(
            if: OpenAPIConformance.python != nil || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to validate responses against the OpenAPI document"))
    func responsesMatchTheDocument() async throws {
        let python = try #require(OpenAPIConformance.python, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        var records: [[String: Any]] = []
        func record(_ path: String, _ response: RawHTTP.Response) throws {
            records.append([
                "path": path, "method": "post", "status": response.status,
                "body": try JSONSerialization.jsonObject(with: response.body),
            ])
        }
        let tokenPath = "/auth/v1/token", purchasePath = "/payment/v1/purchase/verify",
            subscriptionPath = "/payment/v1/subscription/verify"
        try record(tokenPath, try await caller.tokenResponse(basic: true))
        try record(tokenPath, try await caller.tokenResponse(form: "grant_type=password"))
        try record(tokenPath, try await caller.tokenResponse(secret: "rgs_wrong"))
        let token = try await caller.token()

        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000150001", "appAccountToken": "0f8fad5b-d9cb-469f-a165-70867728950e",
            ]))
        try record(
            purchasePath,
            try await caller.verify(
                purchasePath, HiveAxylCaller.purchase(receipt, account: "0f8fad5b-d9cb-469f-a165-70867728950e"),
                token: token))
        try record(
            purchasePath,
            try await caller.verify(purchasePath, HiveAxylCaller.purchase(receipt, requestType: 2), token: token))
        try record(purchasePath, try await caller.verify(purchasePath, ["providerId": "APPLE"], token: token))
        try record(
            purchasePath, try await caller.verify(purchasePath, HiveAxylCaller.purchase(receipt), token: "expired"))
        try record(
            purchasePath,
            try await caller.verify(purchasePath, HiveAxylCaller.purchase(receipt), token: token, appID: "x"))
        try record(
            purchasePath,
            try await caller.verify(purchasePath, HiveAxylCaller.purchase(receipt, product: "other"), token: token))
        let production = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000150002", "environment": "Production"]))
        var sandboxOnly = ClientSettings()
        sandboxOnly.environments = [.sandbox]
        _ = try await harness.service.clients.update(caller.clientID, sandboxOnly)
        try record(
            purchasePath, try await caller.verify(purchasePath, HiveAxylCaller.purchase(production), token: token))
        var rivalSettings = VerifyHarness.settings(name: "Rival", environments: [.sandbox], gameID: 7)
        rivalSettings.settings[HiveAxyl.appIDsSetting] = ["rival.app"]
        let rival = try await harness.service.clients.create(rivalSettings)
        let rivalCaller = HiveAxylCaller(port: caller.port, clientID: rival.client.clientID, secret: rival.secret)
        try record(
            purchasePath,
            try await rivalCaller.verify(
                purchasePath, HiveAxylCaller.purchase(receipt), token: try await rivalCaller.token(), appID: "rival.app"
            ))

        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let subscription = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000150101", "originalTransactionId": "2000000000150101",
                "type": "Auto-Renewable Subscription", "expiresDate": now + 86_400_000,
            ]))
        try record(
            subscriptionPath,
            try await caller.verify(subscriptionPath, HiveAxylCaller.subscription(subscription), token: token))
        try record(
            subscriptionPath,
            try await caller.verify(subscriptionPath, HiveAxylCaller.subscription(receipt), token: token))
        await harness.service.shutdown()

        let statuses = Set(records.compactMap { $0["status"] as? Int })
        #expect(statuses.isSuperset(of: [200, 400, 401, 403, 409, 412, 422]))
        try await OpenAPIConformance.validate(records, python: python, label: "hive-conformance")
    }
}
