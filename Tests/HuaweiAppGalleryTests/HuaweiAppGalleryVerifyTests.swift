import Foundation
import HTTPClient
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

/// The provider against a fake Huawei on loopback: signatures in both schemes, every refusal,
/// normalization, subscriptions, access tokens and confirmations.
@Suite struct HuaweiAppGalleryVerify {
    static func provider(_ huawei: FakeHuawei, retries: Int = 3) -> HuaweiAppGalleryProvider {
        HuaweiAppGalleryProvider(
            configuration: huawei.configuration(), http: FakeHuawei.http(retries: retries),
            logger: Logger(minimumLevel: .error))
    }

    static func client(
        _ huawei: FakeHuawei, packages: [String] = [FakeHuawei.package],
        environments: Set<StoreEnvironment> = [.production, .sandbox]
    ) throws -> ClientInfo {
        ClientInfo(
            clientID: "rgc_huawei", gameID: 42,
            appIdentifiers: [HuaweiAppGalleryProvider.packageNameKind.name: packages],
            environments: environments, settings: try huawei.clientSettings().settings)
    }

    static func context(
        _ huawei: FakeHuawei, productID: String? = "gems100", packages: Set<String> = [FakeHuawei.package],
        environments: Set<StoreEnvironment> = [.production, .sandbox], fields: [String: String] = [:]
    ) throws -> VerificationContext {
        var context = VerificationContext(
            appIdentifiers: packages, environments: environments, productID: productID,
            client: try client(huawei, packages: Array(packages), environments: environments),
            credentials: try huawei.clientSettings().credentials)
        context.evidenceFields = fields
        return context
    }

    static func refusal(_ body: () async throws -> Void) async -> StoreVerificationError? {
        do { try await body(); return nil } catch let error as StoreVerificationError { return error } catch {
            return nil
        }
    }

    @Test func aPurchaseSignedWithPSSIsProvenAndNormalized() async throws {
        let huawei = try FakeHuawei()
        huawei.state.signing.set(.pss)
        try huawei.addProduct(token: "tok.pss.1", orderID: "202405221405238a1b2c3d.107654321", kind: 0, price: 499)
        let purchase = try #require(
            try await Self.provider(huawei).verify(evidence: "tok.pss.1", context: Self.context(huawei)).first)
        #expect(purchase.store == .huaweiAppGallery)
        #expect(purchase.environment == .production)
        #expect(purchase.transactionID == "202405221405238a1b2c3d.107654321")
        #expect(purchase.originalTransactionID == purchase.transactionID)
        #expect(purchase.productID == "gems100")
        #expect(purchase.kind == .consumable)
        #expect(purchase.appIdentifier == FakeHuawei.package)
        #expect(purchase.priceMilliunits == 4990 && purchase.currency == "EUR" && purchase.storefront == "DE")
        #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_716_389_123))
        #expect(purchase.revocationDate == nil)
        // The answer was PSS because the request asked for it.
        #expect(
            huawei.state.appInfoHeaders.get().allSatisfy { $0.contains("SHA256WithRSA/PSS") }
                && !huawei.state.appInfoHeaders.get().isEmpty)
        await huawei.shutdown()
    }

    /// The caller's deadline (the core sets it around a verification's store calls) bounds the
    /// retries: with a second left, Huawei's server error is not tried again.
    @Test func aVerifyWithOneSecondLeftMakesNoSecondAttempt() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.deadline.warm")
        try huawei.addProduct(token: "tok.deadline.1")
        // The access token is fetched first, with no deadline: on a busy machine its exchange
        // could use up the one second before the verify call this test is about.
        let provider = Self.provider(huawei)
        _ = try await provider.verify(evidence: "tok.deadline.warm", context: Self.context(huawei))
        let before = huawei.hits("verify")
        huawei.failFirst("verify", [503])
        let error = await Self.refusal {
            _ = try await OutboundDeadline.$current.withValue(.now + .seconds(1)) {
                try await provider.verify(evidence: "tok.deadline.1", context: Self.context(huawei))
            }
        }
        #expect(error?.isRetryable == true, "\(String(describing: error))")
        #expect(huawei.hits("verify") == before + 1)
        await huawei.shutdown()
    }

    @Test func aPurchaseSignedWithPKCS1IsProven() async throws {
        let huawei = try FakeHuawei()
        huawei.state.signing.set(.pkcs1)
        try huawei.addProduct(token: "tok.pkcs1.1", productID: "no.ads", kind: 1)
        let purchase = try #require(
            try await Self.provider(huawei).verify(
                evidence: "tok.pkcs1.1", context: Self.context(huawei, productID: "no.ads")
            ).first)
        #expect(purchase.kind == .nonConsumable)
        #expect(purchase.productID == "no.ads")
        await huawei.shutdown()
    }

    @Test func aForgedSignatureIsRefusedAsInvalid() async throws {
        let huawei = try FakeHuawei()
        huawei.state.signing.set(.forged)
        try huawei.addProduct(token: "tok.forged.1")
        let refused = await Self.refusal {
            _ = try await Self.provider(huawei).verify(evidence: "tok.forged.1", context: Self.context(huawei))
        }
        #expect(refused?.code == .verificationFailed)
        #expect(refused?.reason == "INVALID_SIGNATURE")
        #expect(refused?.isRetryable == false)
        await huawei.shutdown()
    }

    @Test func aPurchaseOfAnotherPackageIsRefused() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.other.1", package: "com.someone.else")
        let refused = await Self.refusal {
            _ = try await Self.provider(huawei).verify(evidence: "tok.other.1", context: Self.context(huawei))
        }
        #expect(refused?.code == .bundleMismatch)
        #expect(refused?.reason == "PACKAGE_MISMATCH")
        await huawei.shutdown()
    }

    @Test func aPurchaseOfAnotherProductIsRefused() async throws {
        let huawei = try FakeHuawei()
        huawei.state.checksProduct.set(false)  // Huawei answers; only our check stands
        try huawei.addProduct(token: "tok.product.1", productID: "gems500")
        let provider = Self.provider(huawei)
        let refused = await Self.refusal {
            _ = try await provider.verify(
                evidence: "tok.product.1", context: Self.context(huawei, productID: "gems100"))
        }
        #expect(refused?.code == .productMismatch)
        // Purchase data naming another product than the request's is refused before Huawei is asked.
        let hits = huawei.hits("verify")
        let json =
            #"{"purchaseToken":"tok.product.1","productId":"gems500","packageName":"com.example.game.huawei","kind":0}"#
        let early = await Self.refusal {
            _ = try await provider.verify(evidence: json, context: Self.context(huawei, productID: "gems100"))
        }
        #expect(early?.code == .productMismatch)
        #expect(huawei.hits("verify") == hits)
        await huawei.shutdown()
    }

    @Test func aRefundedPurchaseIsRecordedRevokedAndACanceledOneRefused() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.refunded.1", orderID: "order.refunded", state: 2)
        try huawei.addProduct(token: "tok.canceled.1", orderID: "order.canceled", state: 1)
        let provider = Self.provider(huawei)
        let refunded = try #require(
            try await provider.verify(evidence: "tok.refunded.1", context: Self.context(huawei)).first)
        #expect(refunded.revocationDate != nil)
        #expect(refunded.revocationReason == "refunded")
        let canceled = await Self.refusal {
            _ = try await provider.verify(evidence: "tok.canceled.1", context: Self.context(huawei))
        }
        #expect(canceled?.reason == "PURCHASE_CANCELED")
        #expect(canceled?.code == .verificationFailed)
        await huawei.shutdown()
    }

    @Test func aSandboxPurchaseIsInTheSandboxEnvironment() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.sandbox.1", sandbox: true)
        try huawei.addProduct(token: "tok.production.1")
        let provider = Self.provider(huawei)
        #expect(
            try await provider.verify(evidence: "tok.sandbox.1", context: Self.context(huawei)).first?.environment
                == .sandbox)
        #expect(
            try await provider.verify(evidence: "tok.production.1", context: Self.context(huawei)).first?.environment
                == .production)
        // A production-only client: the sandbox purchase is proven as such; the core's one
        // environment rule refuses it (412), as it does every store's.
        let productionOnly = try Self.context(huawei, environments: [.production])
        let sandbox = try #require(try await provider.verify(evidence: "tok.sandbox.1", context: productionOnly).first)
        #expect(sandbox.environment == .sandbox)
        let client = try #require(productionOnly.client)
        let refusal = #expect(throws: StoreVerificationError.self) {
            try VerificationChecks.acceptsEnvironment(of: sandbox, client: client)
        }
        #expect(refusal?.code == .environmentMismatch && refusal?.reason == "ENVIRONMENT_NOT_ALLOWED")
        await huawei.shutdown()
    }

    @Test func aSubscriptionIsReadFromTheSubscriptionService() async throws {
        let huawei = try FakeHuawei()
        let expiry = Date(timeIntervalSince1970: 1_900_000_000)
        try huawei.addSubscription(
            token: "tok.sub.1", subscriptionID: "sub.7", orderID: "order.first",
            expiry: Date().addingTimeInterval(86_400))
        let provider = Self.provider(huawei)
        let json =
            #"{"purchaseToken":"tok.sub.1","productId":"vip.monthly","subscriptionId":"sub.7","kind":2,"packageName":"com.example.game.huawei"}"#
        let first = try #require(
            try await provider.verify(evidence: json, context: Self.context(huawei, productID: nil)).first)
        #expect(first.transactionID == "order.first" && first.originalTransactionID == "sub.7")
        #expect(first.storeAttributes["renewal"] == "false")
        // Huawei charged the next period: a new receipt (its own order), the same subscription.
        try huawei.renewSubscription(token: "tok.sub.1", orderID: "order.renewal.2", expiry: expiry)
        let renewal = try #require(
            try await provider.verify(evidence: json, context: Self.context(huawei, productID: nil)).first)
        #expect(renewal.kind == .autoRenewableSubscription)
        #expect(renewal.transactionID == "order.renewal.2")
        #expect(renewal.originalTransactionID == "sub.7", "every period is a transaction of the one subscription")
        #expect(
            renewal.storeAttributes["renewal"] == "true" && renewal.storeAttributes["last_order_id"] == "order.first")
        #expect(renewal.expiresDate == expiry)
        #expect(renewal.autoRenews == true)
        #expect(renewal.readBackKey != nil)
        #expect(huawei.hits("subscription") == 2 && huawei.hits("verify") == 0)
        // A bare token with the subscription id beside it: its order is the transaction, its subscription the original.
        try huawei.addSubscription(token: "tok.sub.2", subscriptionID: "sub.8", orderID: "order.new")
        let new = try #require(
            try await provider.verify(
                evidence: "tok.sub.2",
                context: Self.context(huawei, productID: "vip.monthly", fields: ["huawei_subscription_id": "sub.8"])
            ).first)
        #expect(new.transactionID == "order.new" && new.originalTransactionID == "sub.8")
        // Data without its subscription id: the id Huawei's subscription service answered for is the original.
        try huawei.addSubscription(
            token: "tok.sub.3", subscriptionID: "sub.9", orderID: "order.nine", extra: ["subscriptionId": NSNull()])
        let unnamed = try #require(
            try await provider.verify(
                evidence: "tok.sub.3",
                context: Self.context(huawei, productID: "vip.monthly", fields: ["huawei_subscription_id": "sub.9"])
            ).first)
        #expect(unnamed.transactionID == "order.nine" && unnamed.originalTransactionID == "sub.9")
        await huawei.shutdown()
    }

    @Test func huaweisRefusalsAndOutagesMapToTheCoresCodes() async throws {
        let huawei = try FakeHuawei()
        let provider = Self.provider(huawei, retries: 2)
        let unknown = await Self.refusal {
            _ = try await provider.verify(evidence: "tok.unknown", context: Self.context(huawei))
        }
        #expect(unknown?.code == .verificationFailed && unknown?.reason == "PURCHASE_NOT_FOUND")
        let noProduct = await Self.refusal {
            _ = try await provider.verify(evidence: "tok.unknown", context: Self.context(huawei, productID: nil))
        }
        #expect(noProduct?.code == .missingFields)
        try huawei.addProduct(token: "tok.outage.1")
        huawei.failFirst("verify", [503, 503])
        let outage = await Self.refusal {
            _ = try await provider.verify(evidence: "tok.outage.1", context: Self.context(huawei))
        }
        #expect(outage?.code == .verifierError && outage?.isRetryable == true)
        // A wrong app secret is the operator's to fix, not the player's.
        var context = try Self.context(huawei)
        context.credentials = [HuaweiAppGalleryProvider.Setting.appSecret: "wrong-secret"]
        let denied = await Self.refusal { _ = try await provider.verify(evidence: "tok.outage.1", context: context) }
        #expect(denied?.code == .verifierError && denied?.reason == "HUAWEI_PERMISSION_DENIED")
        await huawei.shutdown()
    }

    @Test func aRevokedAccessTokenIsReplacedOnce() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.401.1")
        let provider = Self.provider(huawei)
        _ = try await provider.verify(evidence: "tok.401.1", context: Self.context(huawei))
        huawei.revokeIssuedTokens()
        let purchase = try await provider.verify(evidence: "tok.401.1", context: Self.context(huawei))
        #expect(purchase.count == 1)
        #expect(huawei.hits("token") == 2)
        #expect(huawei.hits("verify") == 3)  // one, then a 401 and its retry with the new token
        await huawei.shutdown()
    }

    @Test func theAccessTokenIsCachedAcrossVerifications() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.cache.1")
        try huawei.addProduct(token: "tok.cache.2", orderID: "order.cache.2")
        let provider = Self.provider(huawei)
        _ = try await provider.verify(evidence: "tok.cache.1", context: Self.context(huawei))
        _ = try await provider.verify(evidence: "tok.cache.2", context: Self.context(huawei))
        #expect(huawei.hits("token") == 1)
        #expect(huawei.hits("verify") == 2)
        await huawei.shutdown()
    }

    @Test func aTokenNearItsExpiryIsReplaced() async throws {
        let huawei = try FakeHuawei()
        huawei.state.tokenLifetime.set(200)  // inside the five-minute margin
        try huawei.addProduct(token: "tok.short.1")
        let provider = Self.provider(huawei)
        _ = try await provider.verify(evidence: "tok.short.1", context: Self.context(huawei))
        _ = try await provider.verify(evidence: "tok.short.1", context: Self.context(huawei))
        #expect(huawei.hits("token") == 2)
        await huawei.shutdown()
    }

    @Test func aConsumableIsConfirmedAfterItsFirstClaim() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.confirm.1", kind: 0)
        try huawei.addProduct(token: "tok.durable.1", productID: "no.ads", kind: 1)
        let provider = Self.provider(huawei)
        let client = try Self.client(huawei)
        let consumable = try #require(
            try await provider.verify(evidence: "tok.confirm.1", context: Self.context(huawei)).first)
        let owed = try #require(provider.acknowledgement(for: consumable, client: client))
        #expect(huawei.hits("confirm") == 0)  // nothing before the record commits
        try await provider.acknowledge(owed, credentials: try huawei.clientSettings().credentials)
        #expect(huawei.state.confirmations.get() == ["gems100 tok.confirm.1"])
        // Sent again (an outbox retry after a lost answer): Huawei's "already confirmed" is success.
        try await provider.acknowledge(owed, credentials: try huawei.clientSettings().credentials)
        #expect(huawei.hits("confirm") == 2)
        let durable = try #require(
            try await provider.verify(evidence: "tok.durable.1", context: Self.context(huawei, productID: "no.ads"))
                .first)
        #expect(provider.acknowledgement(for: durable, client: client) == nil)
        await huawei.shutdown()
    }

    /// Huawei verifies only a product's latest token: once confirmed and bought again, the earlier
    /// token is history (`responseCode` 12), told apart from a token Huawei never knew.
    @Test func aConfirmedTokenBoughtAgainIsNoLongerVerifiable() async throws {
        let huawei = try FakeHuawei()
        try huawei.addProduct(token: "tok.first.1", orderID: "order.first.1", kind: 0)
        let provider = Self.provider(huawei)
        let first = try #require(
            try await provider.verify(evidence: "tok.first.1", context: Self.context(huawei)).first)
        try await provider.acknowledge(
            try #require(provider.acknowledgement(for: first, client: try Self.client(huawei))),
            credentials: try huawei.clientSettings().credentials)
        // Confirmed, not yet bought again: still the latest token, and Huawei says it is confirmed.
        let confirmed = try #require(
            try await provider.verify(evidence: "tok.first.1", context: Self.context(huawei)).first)
        #expect(confirmed.storeAttributes["confirmed"] == "true" && confirmed.storeAttributes["consumed"] == "true")
        #expect(
            provider.acknowledgement(for: confirmed, client: try Self.client(huawei)) == nil, "nothing left to confirm")
        try huawei.addProduct(token: "tok.second.1", orderID: "order.second.1", kind: 0)
        let refused = await Self.refusal {
            _ = try await provider.verify(evidence: "tok.first.1", context: Self.context(huawei))
        }
        #expect(
            refused?.code == .verificationFailed && refused?.reason == "PURCHASE_SUPERSEDED",
            "\(String(describing: refused))")
        #expect(
            try await provider.verify(evidence: "tok.second.1", context: Self.context(huawei)).first?.transactionID
                == "order.second.1")
        await huawei.shutdown()
    }
}
