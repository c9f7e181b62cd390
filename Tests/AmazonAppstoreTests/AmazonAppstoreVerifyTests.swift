import AmazonAppstore
import AmazonAppstoreTestSupport
import Foundation
import ReceiptCore
import Testing

/// The provider against a fake RVS on loopback: normalization, environments, RVS's refusals.
@Suite struct AmazonAppstoreVerify {
    static let user = "l3HL7XppEMhrOGDnur9-ulvq/mrSg6qy+ODKmah76lJU="

    static func provider(_ rvs: FakeRVS, attempts: Int = 3) throws -> AmazonAppstoreProvider {
        try AmazonAppstoreProvider(
            configuration: rvs.configuration(attempts: attempts), http: FakeRVS.http(),
            logger: Logger(minimumLevel: .error))
    }

    static func context(
        environments: Set<StoreEnvironment> = [.production, .sandbox], secret: String? = FakeRVS.sharedSecret,
        packages: Set<String> = ["com.example.game"], deadline: ContinuousClock.Instant? = nil
    ) -> VerificationContext {
        var context = VerificationContext(
            appIdentifiers: packages, environments: environments, deadline: deadline,
            client: ClientInfo(
                clientID: "rgc_amazon", gameID: 7,
                appIdentifiers: [AmazonAppstoreProvider.packageNameKind.name: Array(packages)],
                environments: environments),
            credentials: secret.map { [AmazonAppstoreProvider.Setting.sharedSecret: $0] } ?? [:])
        context.transactionID = nil
        return context
    }

    static func refusal(_ body: () async throws -> Void) async -> StoreVerificationError? {
        do { try await body(); return nil } catch let error as StoreVerificationError { return error } catch {
            return nil
        }
    }

    @Test(arguments: [
        ("CONSUMABLE", ProductKind.consumable), ("ENTITLED", .nonConsumable),
        ("SUBSCRIPTION", .autoRenewableSubscription),
    ])
    func eachProductTypeIsNormalized(type: String, kind: ProductKind) async throws {
        let rvs = try FakeRVS()
        let renewal = Date(timeIntervalSince1970: 1_900_000_000)
        try rvs.addReceipt(
            "q1YqVbJSyjH28:3:11+Sheet2!A1+", userID: Self.user, productType: type,
            productID: "item.\(type.lowercased())",
            renewalDate: type == "SUBSCRIPTION" ? renewal : nil, quantity: type == "CONSUMABLE" ? 3 : nil,
            termSku: type == "SUBSCRIPTION" ? "item.subscription_monthly" : nil, beta: true,
            autoRenewing: type == "SUBSCRIPTION")
        let purchases = try await Self.provider(rvs).verify(
            receiptID: "q1YqVbJSyjH28:3:11+Sheet2!A1+", userID: Self.user, context: Self.context())
        let purchase = try #require(purchases.first)
        #expect(purchase.store == .amazonAppstore && purchase.store.rawValue == "amazon_appstore")
        #expect(purchase.environment == .production)
        #expect(purchase.transactionID == "q1YqVbJSyjH28:3:11+Sheet2!A1+")
        #expect(purchase.kind == kind)
        #expect(purchase.productID == "item.\(type.lowercased())")
        #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_716_389_123))
        #expect(purchase.quantity == (type == "CONSUMABLE" ? 3 : 1))
        #expect(purchase.appIdentifier == "com.example.game")
        #expect(purchase.storeAttributes["beta_product"] == "true")
        #expect(purchase.storeAttributes["test_transaction"] == "false")
        #expect(purchase.expiresDate == (type == "SUBSCRIPTION" ? renewal : nil))
        #expect(purchase.storeAttributes["term_sku"] == (type == "SUBSCRIPTION" ? "item.subscription_monthly" : nil))
        #expect(LedgerRules.state(of: purchase, at: Date()) == .active)
        #expect(rvs.hits == ["production"])
        await rvs.shutdown()
    }

    @Test(arguments: ["CONSUMABLE", "ENTITLED"])
    func aCanceledOneTimePurchaseIsRefundedNeverDelivered(type: String) async throws {
        let rvs = try FakeRVS()
        let canceled = Date(timeIntervalSince1970: 1_716_400_000)
        try rvs.addReceipt("r-canceled", userID: Self.user, productType: type, cancelDate: canceled, cancelReason: 1)
        let purchase = try #require(
            try await Self.provider(rvs).verify(receiptID: "r-canceled", userID: Self.user, context: Self.context())
                .first)
        #expect(purchase.revocationDate == canceled)
        #expect(LedgerRules.state(of: purchase, at: Date()) == .refunded)
        await rvs.shutdown()
    }

    @Test func aSubscriptionCanceledByTheCustomerIsRefundedOneAmazonEndedHasExpired() async throws {
        let rvs = try FakeRVS()
        let canceled = Date(timeIntervalSince1970: 1_716_400_000)
        try rvs.addReceipt(
            "sub-refunded", userID: Self.user, productType: "SUBSCRIPTION", cancelDate: canceled, cancelReason: 1,
            renewalDate: Date(timeIntervalSince1970: 1_718_000_000))
        try rvs.addReceipt(
            "sub-lapsed", userID: Self.user, productType: "SUBSCRIPTION", cancelDate: canceled, cancelReason: 2,
            renewalDate: Date(timeIntervalSince1970: 1_718_000_000))
        let provider = try Self.provider(rvs)
        let refunded = try #require(
            try await provider.verify(receiptID: "sub-refunded", userID: Self.user, context: Self.context()).first)
        #expect(LedgerRules.state(of: refunded, at: Date()) == .refunded)
        let lapsed = try #require(
            try await provider.verify(receiptID: "sub-lapsed", userID: Self.user, context: Self.context()).first)
        #expect(LedgerRules.state(of: lapsed, at: Date()) == .expired)
        #expect(lapsed.revocationDate == nil && lapsed.expiresDate == canceled)
        await rvs.shutdown()
    }

    @Test func bothEnvironmentsAskProductionThenTheSandboxOnlyForAnUnknownReceipt() async throws {
        let rvs = try FakeRVS()
        try rvs.addReceipt("sandbox-only", userID: Self.user, sandbox: true, test: true)
        let provider = try Self.provider(rvs)
        let purchase = try #require(
            try await provider.verify(receiptID: "sandbox-only", userID: Self.user, context: Self.context()).first)
        #expect(purchase.environment == .sandbox)
        #expect(purchase.storeAttributes["test_transaction"] == "true")
        #expect(rvs.hits == ["production", "sandbox"])
        // Production-only asks production alone; sandbox-only asks the sandbox alone.
        let productionOnly = await Self.refusal {
            _ = try await provider.verify(
                receiptID: "sandbox-only", userID: Self.user, context: Self.context(environments: [.production]))
        }
        #expect(productionOnly?.code == .verificationFailed && productionOnly?.reason == "RECEIPT_NOT_FOUND")
        #expect(rvs.hits == ["production", "sandbox", "production"])
        _ = try await provider.verify(
            receiptID: "sandbox-only", userID: Self.user, context: Self.context(environments: [.sandbox], secret: "any")
        )
        #expect(rvs.hits == ["production", "sandbox", "production", "sandbox"])
        // A wrong user in production is final: the sandbox is not asked.
        try rvs.addReceipt("prod-1", userID: "someone-else")
        let wrongUser = await Self.refusal {
            _ = try await provider.verify(receiptID: "prod-1", userID: Self.user, context: Self.context())
        }
        #expect(wrongUser?.code == .verificationFailed && wrongUser?.reason == "USER_MISMATCH")
        #expect(rvs.hits.suffix(1) == ["production"] && rvs.hits.count == 5)
        // A test purchase production knows is a sandbox one: proven as such, and refused for a
        // production-only client by the core's one environment rule, as every store's is.
        try rvs.addReceipt("test-in-production", userID: Self.user, test: true)
        let productionClient = Self.context(environments: [.production])
        let tester = try #require(
            try await provider.verify(receiptID: "test-in-production", userID: Self.user, context: productionClient)
                .first)
        #expect(tester.environment == .sandbox)
        let client = try #require(productionClient.client)
        let refusal = #expect(throws: StoreVerificationError.self) {
            try VerificationChecks.acceptsEnvironment(of: tester, client: client)
        }
        #expect(refusal?.code == .environmentMismatch && refusal?.reason == "ENVIRONMENT_NOT_ALLOWED")
        await rvs.shutdown()
    }

    @Test func unknownReceiptAndWrongUserAreRefusalsTheCoreAnswers422() async throws {
        let rvs = try FakeRVS()
        try rvs.addReceipt("r-1", userID: Self.user)
        let provider = try Self.provider(rvs)
        let unknown = await Self.refusal {
            _ = try await provider.verify(receiptID: "r-404", userID: Self.user, context: Self.context())
        }
        #expect(unknown?.code == .verificationFailed && unknown?.isRetryable == false)
        let wrongUser = await Self.refusal {
            _ = try await provider.verify(receiptID: "r-1", userID: "other/user=", context: Self.context())
        }
        #expect(wrongUser?.code == .verificationFailed && wrongUser?.reason == "USER_MISMATCH")
        await rvs.shutdown()
    }

    @Test func aBadSharedSecretIsAVerifierErrorNamingTheSettingAndNeverTheSecret() async throws {
        let rvs = try FakeRVS()
        try rvs.addReceipt("r-1", userID: Self.user)
        let logged = LockedLines()
        let provider = try AmazonAppstoreProvider(
            configuration: rvs.configuration(), http: FakeRVS.http(),
            logger: Logger(minimumLevel: .debug, sink: LogSink { logged.append($0) }))
        let wrong = "wrong-secret-7f3a9c"
        let error = await Self.refusal {
            _ = try await provider.verify(receiptID: "r-1", userID: Self.user, context: Self.context(secret: wrong))
        }
        let refusal = try #require(error)
        #expect(
            refusal.code == .verifierError && refusal.reason == "AMAZON_SHARED_SECRET_INVALID" && !refusal.isRetryable)
        #expect(
            refusal.message.contains("amazon_appstore.shared_secret")
                && refusal.message.contains("--amazon-shared-secret"))
        let missing = await Self.refusal {
            _ = try await provider.verify(receiptID: "r-1", userID: Self.user, context: Self.context(secret: nil))
        }
        #expect(missing?.code == .verifierError && missing?.message.contains("--amazon-shared-secret") == true)
        #expect(logged.lines.count == 2)
        for text in logged.lines + [refusal.description, missing?.description ?? ""] {
            #expect(!text.contains(wrong) && !text.contains(FakeRVS.sharedSecret) && !text.contains("/developer/"))
        }
        await rvs.shutdown()
    }

    @Test func thePackageIsTheNamedOneOrTheOnlyOneAndAnotherAppsIsRefused() async throws {
        let rvs = try FakeRVS()
        try rvs.addReceipt("r-1", userID: Self.user)
        let provider = try Self.provider(rvs)
        let two: Set<String> = ["com.example.game", "com.example.other"]
        let unnamed = try await provider.verify(
            receiptID: "r-1", userID: Self.user, context: Self.context(packages: two))
        #expect(unnamed.first?.appIdentifier == nil)
        let named = try await provider.verify(
            receiptID: "r-1", userID: Self.user, packageName: "com.example.other", context: Self.context(packages: two))
        #expect(named.first?.appIdentifier == "com.example.other")
        let foreign = await Self.refusal {
            _ = try await provider.verify(
                receiptID: "r-1", userID: Self.user, packageName: "com.evil.app", context: Self.context(packages: two))
        }
        #expect(foreign?.code == .bundleMismatch)
        // Through the provider protocol: the receipt id is the evidence, the user id an evidence field.
        var context = Self.context()
        context.evidenceFields = [AmazonAppstoreProvider.userIDField.name: Self.user]
        #expect(try await provider.verify(evidence: "r-1", context: context).first?.transactionID == "r-1")
        let withoutUser = await Self.refusal { _ = try await provider.verify(evidence: "r-1", context: Self.context()) }
        #expect(withoutUser?.code == .missingFields)
        await rvs.shutdown()
    }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func append(_ line: String) { lock.lock(); stored.append(line); lock.unlock() }
    var lines: [String] { lock.lock(); defer { lock.unlock() }; return stored }
}
