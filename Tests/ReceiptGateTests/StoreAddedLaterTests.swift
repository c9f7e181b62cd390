import AccountLink
import AlogameGateway
import AppStore
import Foundation
import GooglePlay
import HiveAxyl
import HuaweiAppGallery
import PluginTestSupport
import Plugins
import ReceiptCore
import ReceiptGate
import Testing

/// The registry's promise: a store is reached through every dialect by the facts it declares
/// (vendor code, operating systems, evidence shapes), so a store none of them has heard of works
/// unchanged. A made-up fifth store on the fake core goes through Hive Axyl, `/iap` and the
/// Alogame gateway; and the rule that picks a store for an operating system is checked case by case.
@Suite struct StoreAddedLater {
    static let acmeApps = AppIdentifierKind(name: "acme_package", flag: "acme-package", help: "Acme Store package")
    static let acme = StoreDeclaration(
        store: StoreID(rawValue: "acme_store"), displayName: "Acme Store", identifiers: acmeApps,
        evidenceFields: [
            EvidenceField(name: "acme_region", required: false, maxLength: 16, description: "the Acme region")
        ],
        vendorCode: "acme", operatingSystems: [.android], evidenceShapes: [.purchaseToken],
        openAPI: OpenAPIPart(sharedFieldNotes: ["receipt": "an Acme purchase token."]))
    static let client = ClientInfo(
        clientID: "rgc_acme", gameID: 42, appIdentifiers: [acmeApps.name: ["com.example.acme"]],
        environments: [.production, .sandbox], settings: [HiveAxyl.appIDsSetting: ["com.example.hive"]])

    static func core() -> FakeCore {
        let core = FakeCore()
        core.stores = [AppStoreProvider.declaration, GooglePlayProvider.declaration, acme]
        core.clients = [client]
        var purchase = VerifiedPurchase(store: acme.store, environment: .production, transactionID: "ACME-1")
        purchase.originalTransactionID = "ACME-1"
        purchase.productID = "gems100"
        purchase.kind = .nonConsumable
        purchase.appIdentifier = "com.example.acme"
        purchase.purchaseDate = Date(timeIntervalSince1970: 1_780_000_000)
        core.add(evidence: "acme-token-1", proves: purchase)
        return core
    }

    @Test func hiveAxylTakesItsVendorCode() async throws {
        let core = Self.core()
        let token = try await core.tokens.issue(
            TokenRequest(kind: HiveAxyl.tokenKind, clientID: Self.client.clientID, lifetime: .seconds(60))
        ).token
        let body: [String: Any] = [
            "providerId": "ACME", "axylReceipt": "acme-token-1", "productId": "gems100", "accountUuid": "a-1",
            "requestType": 1,
        ]
        let answer = await core.call(
            HiveAxyl(), "POST", "/payment/v1/purchase/verify", body: try JSONSerialization.data(withJSONObject: body),
            headers: [
                "authorization": "Bearer \(token)", "content-type": "application/json", "x-app-id": "com.example.hive",
            ])
        #expect((answer.object["result"] as? [String: Any])?["code"] as? Int == 100, "\(answer.object)")
        #expect(core.recordedRequests.map(\.store) == [Self.acme.store])
    }

    @Test func theAccountLinkFlowTakesAnObjectNamedByItsVendorCodeInTheTokenLayout() async throws {
        let core = Self.core()
        let headers = [
            "x-client-app-version": "1.0", "x-client-device-model": "mobile", "x-client-os": "android",
            "x-client-os-version": "14",
            "x-sdk-version": "5.0", "content-type": "application/json",
        ]
        // Another store's object sent as null (as generated clients write it) is absent.
        let body: [String: Any] = [
            "apple": NSNull(),
            "acme": ["package_id": "com.example.acme", "purchase_token": "acme-token-1", "product_id": "gems100"],
        ]
        let answer = await core.call(
            AccountLink(), "POST", "/iap", body: try JSONSerialization.data(withJSONObject: body), headers: headers)
        #expect(answer.status == 200, "\(answer.object)")
        #expect(answer.object["auto_account_created"] as? Bool == true)
        #expect(core.recordedRequests.first?.productID == "gems100")
        // The error names every served store's object, this one included.
        let none = await core.call(AccountLink(), "POST", "/iap", body: Data("{}".utf8), headers: headers)
        #expect(none.status == 400)
        #expect((none.object["message"] as? String)?.contains("'acme'") == true, "\(none.object)")
        // The store's own rule for a bare transaction id, before anything is asked.
        let long = ["apple": ["bundle_id": "com.example.game", "transaction_id": String(repeating: "1", count: 22)]]
        let refused = await core.call(
            AccountLink(), "POST", "/iap", body: try JSONSerialization.data(withJSONObject: long), headers: headers)
        #expect(refused.status == 400, "\(refused.object)")
    }

    @Test func theAlogameGatewayReachesItForTheClientsAndroidApps() async throws {
        let core = Self.core()
        let body: [String: Any] = ["receipt": "acme-token-1", "product_id": "gems100", "os_id": 1]
        let answer = await core.call(
            AlogameGateway(), "POST", "/iap/gateway/verify", body: try JSONSerialization.data(withJSONObject: body),
            signedAs: Self.client)
        #expect(answer.status == 200, "\(answer.object)")
        #expect(core.recordedRequests.map(\.store) == [Self.acme.store])
    }

    /// A web store no device id names: the gateway, which names stores only by device, says so in
    /// its error rather than leaving the caller to guess.
    @Test func theAlogameGatewaySaysItCannotReachAWebStore() async throws {
        let core = Self.core()
        let web = StoreDeclaration(
            store: StoreID(rawValue: "acme_web"), displayName: "Acme Web",
            identifiers: AppIdentifierKind(name: "acme_web_account", flag: "acme-web-account", help: "Acme account"),
            vendorCode: "ACMEWEB", operatingSystems: [.web], evidenceShapes: [.purchaseToken])
        core.stores.append(web)
        let body: [String: Any] = ["receipt": "cs_123", "product_id": "gems100", "os_id": 3]
        let answer = await core.call(
            AlogameGateway(), "POST", "/iap/gateway/verify", body: try JSONSerialization.data(withJSONObject: body),
            signedAs: Self.client)
        #expect(answer.status == 400, "\(answer.object)")
        let message = answer.object["message"] as? String ?? ""
        #expect(
            message.contains("Acme Web purchases cannot be sent here") && !message.contains("Acme Store"), "\(message)")
    }

    // MARK: - The served document

    /// The document a service serving the fifth store beside two shipped ones would serve: the
    /// core's part with every registered dialect's, written from these stores' facts.
    static func servedDocument() throws -> String {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let core = try String(
            contentsOf: here.appendingPathComponent("../../Deploy/openapi.yaml").standardized, encoding: .utf8)
        let dialects = try Plugins.all.dialects.map { try $0.start(PluginEnvironment(variables: [:])) }
        return try OpenAPIDocument.assemble(
            core: core, stores: [AppStoreProvider.declaration, GooglePlayProvider.declaration, acme],
            dialects: dialects)
    }

    /// The lines of one path item (`  /path:` up to the next path), each trimmed.
    static func route(_ path: String, in document: String) throws -> [String] {
        let start = try #require(document.range(of: "\n  \(path):\n"), "\(path) is not in the document")
        let rest = document[start.upperBound...]
        let end = rest.range(of: "\n  /")?.lowerBound ?? rest.endIndex
        return rest[..<end].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    @Test func hiveAxylsSchemasTakeItsVendorCodeAndItsFieldInCamelCase() throws {
        let document = try Self.servedDocument()
        for path in ["/payment/v1/purchase/verify", "/payment/v1/subscription/verify"] {
            let lines = try Self.route(path, in: document)
            #expect(
                lines.contains(#"providerId: {type: string, enum: ["APPLE", "GOOGLE", "ACME"]}"#),
                "\(path): \(lines.filter { $0.hasPrefix("providerId") })")
            #expect(
                lines.contains { $0.hasPrefix("acmeRegion: {type: string, maxLength: 16,") }, "\(path) lacks acmeRegion"
            )
        }
        #expect(
            try Self.route("/payment/v1/purchase/verify", in: document).contains(
                "- `ACME` (Acme Store): an Acme purchase token. With `acmeRegion` (optional)."))
    }

    @Test func theAccountLinkSchemaHasItsObjectInTheTokenLayout() throws {
        let lines = try Self.route("/iap", in: try Self.servedDocument())
        let object = try #require(lines.firstIndex(of: "acme:"), "/iap has no acme object")
        #expect(
            Array(lines[object...].prefix(8)) == [
                "acme:", "type: object", #"description: "Acme Store: an Acme purchase token.""#,
                "required: [package_id, purchase_token]",
                "properties:", "package_id: {type: string}", "purchase_token: {type: string}",
                #"product_id: {type: string, description: "Optional; the purchase must be for this product."}"#,
            ])
        #expect(lines.contains { $0.hasPrefix("acme_region: {type: string, maxLength: 16,") })
        #expect(
            lines.contains(
                "- `acme`: Acme Store, with `acme.package_id` and `acme.purchase_token`, `acme.acme_region` (optional)")
        )
    }

    @Test func theAlogameGatewaySaysWhatItTakesAsAnAndroidReceipt() throws {
        let lines = try Self.route("/iap/gateway/verify", in: try Self.servedDocument())
        #expect(lines.contains("- `os_id` 1, Acme Store: an Acme purchase token."), "\(lines)")
    }

    // MARK: - Choosing a store for an operating system

    static func android(
        _ apps: [AppIdentifierKind], evidence: String, stores: [StoreDeclaration]? = nil
    ) -> Result<String, StoreChoiceRefused> {
        let core = FakeCore()
        core.stores =
            stores ?? [
                AppStoreProvider.declaration, GooglePlayProvider.declaration, HuaweiAppGalleryProvider.declaration,
                AmazonStandIn.declaration,
            ]
        let client = ClientInfo(
            clientID: "c", gameID: 1,
            appIdentifiers: Dictionary(uniqueKeysWithValues: apps.map { ($0.name, ["com.example"]) }),
            environments: [.production])
        return Result { () throws(StoreChoiceRefused) in
            try core.store(runningOn: .android, client: client, evidence: evidence).displayName
        }
    }

    @Test func aClientWithNoAppThereGetsOneStoresAnswer() throws {
        // Any store would refuse it alike (no app registered): the first by store id answers.
        #expect(try Self.android([], evidence: "tok.1").get() == "Google Play")
    }

    @Test func theClientsAppsDecideFirst() throws {
        #expect(
            try Self.android([HuaweiAppGalleryProvider.packageNameKind], evidence: "tok.1").get() == "Huawei AppGallery"
        )
        #expect(try Self.android([GooglePlayProvider.packageNameKind], evidence: "tok.1").get() == "Google Play")
    }

    @Test func thenTheReceiptsFormThenWhatOnlyOneStoresSDKMakes() throws {
        let both = [GooglePlayProvider.packageNameKind, HuaweiAppGalleryProvider.packageNameKind]
        let unity =
            #"{"Store":"GooglePlay","TransactionID":"GPA.1","Payload":"{\"json\":\"{\\\"orderId\\\":\\\"GPA.1\\\",\\\"purchaseToken\\\":\\\"t\\\"}\",\"signature\":\"s\"}"}"#
        #expect(try Self.android(both, evidence: unity).get() == "Google Play")
        #expect(
            try Self.android(
                both, evidence: #"{"inAppPurchaseData":"{\"purchaseToken\":\"t\"}","inAppDataSignature":"s"}"#
            ).get()
                == "Huawei AppGallery")
        // A bare token fits both: refused, naming them.
        guard case .failure(let refused) = Self.android(both, evidence: "tok.1") else {
            Issue.record("a bare token chose a store"); return
        }
        #expect(refused.candidates.sorted() == ["Google Play", "Huawei AppGallery"])
        // A store that needs a field this dialect cannot carry is never chosen.
        #expect(
            try Self.android(
                [AmazonStandIn.apps], evidence: "tok.1",
                stores: [AmazonStandIn.declaration, GooglePlayProvider.declaration]
            ).get()
                == "Google Play")
        guard case .failure(let none) = Self.android([], evidence: "tok.1", stores: [AppStoreProvider.declaration])
        else {
            Issue.record("an iOS-only server chose an Android store"); return
        }
        #expect(none.candidates.isEmpty)
    }

    @Test func evidenceFormsAreJudgedFromTheTextAlone() {
        #expect(EvidenceShape.forms(of: "eyJhbGciOiJFUzI1NiJ9.eyJ0cmFuc2FjdGlvbklkIjoiMSJ9.c2ln") == [.signedDocument])
        #expect(EvidenceShape.forms(of: "MII" + String(repeating: "A", count: 100)) == [.signedDocument])
        #expect(EvidenceShape.forms(of: #"{"purchaseToken":"t"}"#) == [.purchaseData])
        #expect(EvidenceShape.forms(of: "abc.DEF_ghi-1").contains(.purchaseToken))
        #expect(EvidenceShape.forms(of: "not a token!").isEmpty)
    }
}

/// A store that proves a receipt only with a user id field (as Amazon's does), for the rule above.
enum AmazonStandIn {
    static let apps = AppIdentifierKind(name: "standin_package", flag: "standin-package", help: "stand-in")
    static let declaration = StoreDeclaration(
        store: StoreID(rawValue: "standin"), displayName: "Stand-in", identifiers: apps,
        evidenceFields: [EvidenceField(name: "standin_user_id", required: true, description: "user")],
        vendorCode: "STANDIN", operatingSystems: [.android], evidenceShapes: [.receiptWithUser])
}
