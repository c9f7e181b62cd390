import AppStoreTestSupport
import Foundation
import HTTPClient
import HTTPServer
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

@testable import AppStore

@Suite struct AppReceiptParsing {
    /// A real StoreKit 1 sandbox receipt Apple signed on 2025-10-16 (its chain is Apple's: receipt
    /// signing → WWDR G5 → Apple Root CA), published in a public iOS project's source.
    @Test func parsesARealAppleReceipt() throws {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/real-sandbox-receipt", withExtension: "b64"))
        let receipt = try AppReceipt(base64: try String(contentsOf: url, encoding: .utf8))
        #expect(receipt.bundleID == "com.starlink.crushlive")
        #expect(receipt.receiptType == "ProductionSandbox")
        #expect(receipt.environment == .sandbox)
        #expect(receipt.applicationVersion == "1")
        #expect(receipt.originalApplicationVersion == "1.0")
        #expect(receipt.creationDate == Date(timeIntervalSince1970: 1_760_597_486))
        #expect(receipt.inApp.count == 1)
        let purchase = try #require(receipt.inApp.first)
        #expect(purchase.productID == "com.starlink.crushlive.coins_6000")
        #expect(purchase.transactionID == "2000001035354428")
        #expect(purchase.originalTransactionID == "2000001035354428")
        #expect(purchase.quantity == 1)
        #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_760_597_486))
        #expect(purchase.expiresDate == nil)
    }

    @Test(arguments: [false, true])
    func parsesDERAndStreamedBER(streamed: Bool) throws {
        let receipt = try AppReceipt(
            base64: try TestReceipts.sign(
                TestReceipts.payload(purchases: [("2000000000000501", "gems.100"), ("2000000000000502", "gems.500")]),
                streamed: streamed))
        #expect(receipt.bundleID == "com.example.game")
        #expect(receipt.inApp.map(\.transactionID) == ["2000000000000501", "2000000000000502"])
        #expect(receipt.inApp.first?.quantity == 2)
        #expect(receipt.inApp.first?.webOrderLineItemID == 220_000_072_586_770)
    }

    @Test(arguments: [
        "", "!!!!", "aGVsbG8gd29ybGQ=", Data((0..<600).map { UInt8($0 % 256) }).base64EncodedString(),
        String(repeating: "A", count: 2_000_004),
    ])
    func garbageIsACleanRejection(_ text: String) {
        expectRejection(.receiptMalformed) { _ = try AppReceipt(base64: text) }
    }

    @Test func truncatedOrWrongPayloadsAreRejected() throws {
        let good = try #require(Data(base64Encoded: try TestReceipts.sign(TestReceipts.payload(), streamed: false)))
        expectRejection(.receiptMalformed) {
            _ = try AppReceipt(base64: good.prefix(good.count / 2).base64EncodedString())
        }
        let notASet = try TestReceipts.sign(DER.utf8("not a receipt"), streamed: false)
        expectRejection(.receiptMalformed) { _ = try AppReceipt(base64: notASet) }
        let noBundle = try TestReceipts.sign(DER.set([DER.attribute(0, DER.utf8("Production"))]), streamed: false)
        expectRejection(.receiptMalformed) { _ = try AppReceipt(base64: noBundle) }
    }
}

@Suite struct AppReceiptValidation {
    static let expectations = AppStoreExpectations(
        bundleIDs: ["com.example.game"], environments: [.sandbox, .production])

    @Test func confirmedThroughTheAppStoreServerAPI() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000000501", environment: "Sandbox", ["productId": "gems.100"])
        let validator = AppReceiptValidator(
            mode: .serverAPI(fake.client()), verifier: AppStoreSignedDataVerifier(trustRoots: [fake.pki.root]),
            receiptTrustRoots: [try TestReceipts.signingPKI().root])
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        let confirmed = try await validator.validate(receipt, expecting: Self.expectations)
        #expect(confirmed.count == 1)
        #expect(confirmed.first?.transactionID == "2000000000000501")
        #expect(confirmed.first?.environment == .sandbox)
        #expect(confirmed.first?.signedTransaction?.price == 990)
        // The receipt said sandbox, so sandbox was asked first.
        #expect(fake.hits("Production /inApps/v1/transactions/{id}") == 0)

        // A fabricated receipt naming a transaction Apple never made.
        let invented = try TestReceipts.sign(
            TestReceipts.payload(purchases: [("2000000000009999", "gems.100")]), streamed: false)
        await expectAsyncRejection(.receiptNotConfirmed) {
            _ = try await validator.validate(invented, expecting: Self.expectations)
        }
        let otherApp = try TestReceipts.sign(TestReceipts.payload(bundle: "com.other"), streamed: false)
        await expectAsyncRejection(.bundleMismatch) {
            _ = try await validator.validate(otherApp, expecting: Self.expectations)
        }
        fake.state.failuresFirst.set(["/inApps/v1/transactions/{id}": [503, 503, 503]])
        await expectAsyncRejection(.storeUnavailable) {
            _ = try await validator.validate(receipt, expecting: Self.expectations)
        }
        await fake.shutdown()
    }

    @Test func confirmedThroughVerifyReceiptWithTheSandboxRedirect() async throws {
        let fake = try FakeVerifyReceipt()
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        let validator = try fake.validator(http: HTTPClientForTests.fast())
        let confirmed = try await validator.validate(receipt, expecting: Self.expectations)
        #expect(confirmed.map(\.transactionID) == ["2000000000000501"])
        #expect(confirmed.first?.environment == .sandbox)
        #expect(confirmed.first?.quantity == 1)
        #expect(confirmed.first?.signedTransaction == nil)
        #expect(fake.calls.get() == ["production:shh", "sandbox:shh"])

        let productionOnly = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.production])
        await expectAsyncRejection(.environmentMismatch) {
            _ = try await validator.validate(receipt, expecting: productionOnly)
        }
        for (status, reason) in [
            (21002, AppStoreVerificationError.Reason.receiptNotConfirmed), (21003, .receiptNotConfirmed),
            (21004, .misconfigured), (21005, .storeUnavailable), (21199, .storeUnavailable),
            (21010, .receiptNotConfirmed),
        ] {
            fake.sandboxStatus.set(status)
            await expectAsyncRejection(reason) {
                _ = try await validator.validate(receipt, expecting: Self.expectations)
            }
        }
        await fake.shutdown()
    }

    @Test func statusTableMatchesApplesDocumentation() {
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 0) == nil)
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 21006) == nil)
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 21004)?.reason == .misconfigured)
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 21009)?.isRetryable == true)
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 21000)?.errorCode == .verificationFailed)
    }
}

func expectAsyncRejection(
    _ reason: AppStoreVerificationError.Reason, _ body: () async throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    do {
        try await body()
        Issue.record("accepted; expected \(reason)", sourceLocation: sourceLocation)
    } catch let error as AppStoreVerificationError {
        #expect(
            error.reason == reason, "rejected as \(error.reason) (\(error.message)); expected \(reason)",
            sourceLocation: sourceLocation)
    } catch {
        Issue.record("failed with \(error); expected \(reason)", sourceLocation: sourceLocation)
    }
}

@Suite struct StoreKit1ThroughTheProvider {
    /// The provider picks StoreKit 1 for base64 receipts and normalizes only what SK1 says.
    @Test func sk1EvidenceIsNormalizedWithTheRestNull() async throws {
        let fake = try FakeVerifyReceipt()
        var configuration = try AppStoreConfiguration.fromEnvironment([
            "RECEIPTGATE_APPSTORE_SHARED_SECRET": "shh",
            "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_PRODUCTION_URL": fake.productionURL,
            "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_SANDBOX_URL": fake.sandboxURL,
        ])
        configuration.trustRoots = []
        configuration.receiptTrustRoots = [try TestReceipts.signingPKI().root]
        let provider = AppStoreProvider(
            verifier: AppStoreSignedDataVerifier(trustRoots: []), configuration: configuration,
            http: HTTPClientForTests.fast())
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: true)
        let purchases = try await provider.verify(
            evidence: receipt, context: .init(appIdentifiers: ["com.example.game"], environments: [.sandbox]))
        let purchase = try #require(purchases.first)
        #expect(purchase.transactionID == "2000000000000501")
        #expect(purchase.environment == .sandbox)
        #expect(purchase.quantity == 1)
        #expect(purchase.productID == "gems.100")
        #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_760_597_486))
        #expect(
            purchase.kind == nil && purchase.priceMilliunits == nil && purchase.currency == nil
                && purchase.storefront == nil && purchase.ownership == nil)

        // Without a shared secret or API key, a genuine SK1 receipt cannot be confirmed: a server-side problem, not the player's.
        var bare = AppStoreConfiguration(trustRoots: [])
        bare.receiptTrustRoots = configuration.receiptTrustRoots
        let unconfirmable = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: []), configuration: bare)
        do {
            _ = try await unconfirmable.verify(
                evidence: receipt, context: .init(appIdentifiers: ["com.example.game"], environments: [.sandbox]))
            Issue.record("an SK1 receipt was accepted with no way to confirm it")
        } catch let error as StoreVerificationError {
            #expect(error.code == .verifierError)
        }
        // With no configuration at all, receipts must chain to Apple's root, which a test PKI's do not.
        let unconfigured = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: []))
        do {
            _ = try await unconfigured.verify(
                evidence: receipt, context: .init(appIdentifiers: ["com.example.game"], environments: [.sandbox]))
            Issue.record("a receipt signed outside Apple's PKI was accepted")
        } catch let error as StoreVerificationError {
            #expect(error.code == .verificationFailed)
            #expect(error.reason == AppStoreVerificationError.Reason.chainNotTrusted.rawValue)
        }
        #expect(fake.calls.get() == ["production:shh", "sandbox:shh"])
        await fake.shutdown()
    }
}
