import AlogameGateway
import AppStore
import AppStoreTestSupport
import Foundation
import GooglePlay
import GooglePlayTestSupport
import HiveAxyl
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// Answers the README and Deploy/openapi.yaml describe for the drop-in gateways, where a client
/// written from the contracts alone is most likely to be surprised: Android through the Alogame
/// gateway, StoreKit 1 in Server API mode, and a Google purchase on a server with no Google key.
@Suite struct GatewayDocumentedAnswers {
    /// The `receiptgate` binary always registers the Google Play provider; without a service-account
    /// key (the service's or the client's) a Google purchase is a 502 that names the missing key and
    /// does not invite a retry that cannot succeed.
    @Test func aGooglePurchaseWithoutAGoogleKeyIsAVerifierErrorNamingIt() async throws {
        var google = GooglePlayConfiguration()
        google.voidedPurchasesInterval = nil
        let harness = try await VerifyHarness.start(
            dialects: [AlogameGateway(), HiveAxyl()],
            otherStores: [GooglePlayProvider(configuration: google).registration])
        defer { harness.stop() }
        var settings = ClientSettings()
        settings.appIdentifiers[GooglePlayProvider.packageNameKind.name] = ["com.example.game"]
        settings.settings[HiveAxyl.appIDsSetting] = [HiveAxylCaller.appID]
        _ = try await harness.service.clients.update(harness.client.clientID, settings)

        let alogame = try await harness.client.post(
            "/iap/gateway/verify", json: ["receipt": "tok-android", "product_id": "gems100", "os_id": 1])
        #expect(alogame.status == 502, "\(alogame.text)")
        #expect(try alogame.json()["error"] as? String == "VERIFIER_ERROR")
        #expect(
            (try alogame.json()["message"] as? String)?.hasPrefix("GOOGLE_NOT_CONFIGURED") == true, "\(alogame.text)")

        let caller = HiveAxylCaller(
            port: harness.client.port, clientID: harness.client.clientID, secret: harness.client.secret)
        var body = HiveAxylCaller.purchase("tok-android", product: "gems100")
        body["providerId"] = "GOOGLE"
        let hive = try await caller.verify("/payment/v1/purchase/verify", body, token: try await caller.token())
        #expect(hive.status == 502, "\(hive.text)")
        #expect(hive.hiveCode == 5020)
        let message = ((try hive.json()["result"] as? [String: Any])?["message"] as? String) ?? ""
        #expect(message.contains("GOOGLE_NOT_CONFIGURED"), "\(message)")
        #expect(!message.contains("safe to retry"), "retrying cannot help until the operator adds a key: \(message)")
        await harness.service.shutdown()
    }

    /// With the App Store Server API (`RECEIPTGATE_APPSTORE_RECEIPT_MODE=server_api`), a StoreKit 1
    /// receipt's transaction is read from Apple's signed answer, so `receipt_info` carries what
    /// SK2 carries; Android answers say `platform: "android"`. Both match the OpenAPI document.
    @Test(
        .enabled(
            if: OpenAPIConformance.python != nil || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to validate responses against the OpenAPI document"))
    func storeKit1InServerAPIModeAndAndroidAnswersMatchTheDocument() async throws {
        let python = try #require(OpenAPIConformance.python, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        var records: [[String: Any]] = []
        func record(_ response: RawHTTP.Response) throws -> [String: Any] {
            let body = try response.json()
            records.append(["path": "/iap/gateway/verify", "method": "post", "status": response.status, "body": body])
            return body
        }

        let apple = try FakeAppStoreServerAPI()
        try apple.add("2000000000000501", environment: "Sandbox", ["productId": "gems.100"])
        let receiptRoot = try TestReceipts.signingPKI().root
        let harness = try await VerifyHarness.start(dialects: [AlogameGateway()], pki: apple.pki) { pki in
            var appStore = AppStoreConfiguration(trustRoots: [pki.root])
            appStore.receiptTrustRoots = [receiptRoot]
            appStore.receiptMode = .serverAPI
            appStore.serverAPIKey = .init(
                keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID, privateKey: apple.teamKey)
            appStore.serverAPIProductionURL = "http://127.0.0.1:\(apple.production.port)"
            appStore.serverAPISandboxURL = "http://127.0.0.1:\(apple.sandbox.port)"
            return appStore
        }
        defer { harness.stop() }
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        let sk1 = try record(
            try await harness.client.post(
                "/iap/gateway/verify", json: ["receipt": receipt, "product_id": "gems.100", "os_id": 2]))
        let info = try #require(sk1["receipt_info"] as? [String: Any], "\(String(describing: sk1))")
        #expect(info["platform"] as? String == "ios")
        #expect(info["type"] as? String == "Consumable")
        #expect(info["storefront"] as? String == "USA")
        #expect(info["price"] as? Int == 990)
        #expect(info["currency"] as? String == "USD")
        #expect(info["in_app_ownership_type"] as? String == "PURCHASED")
        await harness.service.shutdown()
        await apple.shutdown()

        let android = try await GooglePlayHarness.start()
        defer { android.stop() }
        try android.google.addProduct(token: "tok-documented", orderID: "GPA.3301-2345-6789-88888", test: true)
        let answer = try record(
            try await android.client.post(
                "/iap/gateway/verify", json: ["receipt": "tok-documented", "product_id": "gems100", "os_id": 1]))
        #expect((answer["receipt_info"] as? [String: Any])?["platform"] as? String == "android", "\(answer)")
        try await OpenAPIConformance.validate(records, python: python, label: "gateway-documented")
    }
}
