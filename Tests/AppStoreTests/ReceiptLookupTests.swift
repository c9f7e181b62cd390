import AppStoreTestSupport
import Foundation
import HTTPClient
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

@testable import AppStore

/// StoreKit 1 through the provider, configured from the environment as in production, against
/// the local fake of the App Store Server API, which counts every call.
@Suite struct ReceiptLookups {
    struct Setup {
        let fake: FakeAppStoreServerAPI
        let provider: AppStoreProvider

        /// `receiptRoots`: what RECEIPTGATE_APPLE_RECEIPT_ROOT_CERTS names; nil leaves it unset (Apple's root).
        static func start(receiptRoots: [Certificate]? = nil) async throws -> Setup {
            let fake = try FakeAppStoreServerAPI()
            let directory = TestDatabase.temporaryDirectory("sk1-lookups")
            func write(_ name: String, _ text: String) throws -> String {
                let path = directory.appendingPathComponent(name).path
                try text.write(toFile: path, atomically: true, encoding: .utf8)
                return path
            }
            func pem(_ certificate: Certificate) -> String {
                "-----BEGIN CERTIFICATE-----\n"
                    + certificate.derEncoded.base64EncodedString(options: .lineLength64Characters)
                    + "\n-----END CERTIFICATE-----\n"
            }
            var environment = [
                "RECEIPTGATE_APPLE_ROOT_CERTS": try write("sk2-root.pem", pem(fake.pki.root)),
                "RECEIPTGATE_APPSTORE_API_KEY_ID": FakeAppStoreServerAPI.keyID,
                "RECEIPTGATE_APPSTORE_API_ISSUER_ID": FakeAppStoreServerAPI.issuerID,
                "RECEIPTGATE_APPSTORE_API_KEY_PATH": try write("AuthKey.p8", try fake.teamKey.pemRepresentation()),
                "RECEIPTGATE_APPSTORE_API_PRODUCTION_URL": "http://127.0.0.1:\(fake.production.port)",
                "RECEIPTGATE_APPSTORE_API_SANDBOX_URL": "http://127.0.0.1:\(fake.sandbox.port)",
            ]
            if let receiptRoots {
                // One DER file and one PEM file, as the variable accepts either.
                let der = directory.appendingPathComponent("receipt-root.der")
                try #require(receiptRoots.first).derEncoded.write(to: der)
                let rest = try write("receipt-roots.pem", receiptRoots.dropFirst().map(pem).joined())
                environment["RECEIPTGATE_APPLE_RECEIPT_ROOT_CERTS"] =
                    receiptRoots.count > 1 ? "\(der.path), \(rest)" : der.path
            }
            // The service's retry policy, with the patience of FakeAppStoreServerAPI.client: the fake's
            // handlers share the busy test pool, and a slow answer must not become a counted retry.
            var http = HTTPClient.Configuration()
            http.timeout = .seconds(60)
            return Setup(
                fake: fake, provider: try AppStoreProvider.fromEnvironment(environment, http: HTTPClient(http)))
        }

        var appleCalls: Int { fake.state.hits.get().values.reduce(0, +) }

        func verify(
            _ receipt: String, productID: String? = nil, transactionID: String? = nil,
            deadline: ContinuousClock.Instant? = nil
        ) async throws -> [VerifiedPurchase] {
            var context = VerificationContext(
                appIdentifiers: ["com.example.game"], environments: [.sandbox, .production], productID: productID,
                deadline: deadline)
            context.transactionID = transactionID
            return try await provider.verify(evidence: receipt, context: context)
        }
    }

    static func expectRefusal(
        _ code: ErrorCode, reason: AppStoreVerificationError.Reason? = nil, _ body: () async throws -> Void,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            try await body()
            Issue.record("accepted; expected \(code)", sourceLocation: sourceLocation)
        } catch let error as StoreVerificationError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            if let reason { #expect(error.reason == reason.rawValue, "\(error)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("failed with \(error); expected \(code)", sourceLocation: sourceLocation)
        }
    }

    @Test func aReceiptSignedUnderTheConfiguredRootIsAcceptedEndToEnd() async throws {
        let pki = try TestReceipts.signingPKI()
        let setup = try await Setup.start(receiptRoots: [try AppleRootCertificates.appleReceiptRoot(), pki.root])
        try setup.fake.add("2000000000000501", environment: "Sandbox", ["productId": "gems.100"])
        let purchases = try await setup.verify(
            try TestReceipts.sign(TestReceipts.payload(), streamed: true), productID: "gems.100")
        #expect(purchases.map(\.transactionID) == ["2000000000000501"])
        #expect(purchases.first?.priceMilliunits == 990)
        #expect(setup.appleCalls == 1)
        await setup.fake.shutdown()
    }

    @Test func forgeriesAreRefusedBeforeAnyAppleCall() async throws {
        let setup = try await Setup.start()
        // Apple's real content in a look-alike chain, for the bundle it names.
        let lookAlike = try ReceiptForgeries.LookAlikePKI().sign(try ReceiptForgeries.realContainer().content)
        let forgeries = [
            lookAlike, try ReceiptForgeries.tamperedReceipt(), try ReceiptForgeries.unsignedReceipt(),
            try TestReceipts.sign(TestReceipts.payload(), streamed: false), "bm90IGEgcmVjZWlwdA==",
        ]
        for forged in forgeries {
            await Self.expectRefusal(.verificationFailed) {
                _ = try await setup.provider.verify(
                    evidence: forged,
                    context: VerificationContext(
                        appIdentifiers: ["com.example.game", "com.starlink.crushlive"],
                        environments: [.sandbox, .production]))
            }
        }
        #expect(setup.appleCalls == 0)
        await setup.fake.shutdown()
    }

    @Test func aGenuineReceiptOfAnotherAppIsRefusedBeforeAnyAppleCall() async throws {
        let setup = try await Setup.start(receiptRoots: [try TestReceipts.signingPKI().root])
        try setup.fake.add("2000000000000501", environment: "Sandbox")
        await Self.expectRefusal(.bundleMismatch) {
            _ = try await setup.verify(
                try TestReceipts.sign(TestReceipts.payload(bundle: "com.other.game"), streamed: false))
        }
        // A receipt that names its environment is held to the core's one rule before Apple is asked.
        await Self.expectRefusal(.environmentMismatch, reason: .init(rawValue: "ENVIRONMENT_NOT_ALLOWED")) {
            _ = try await setup.provider.verify(
                evidence: try TestReceipts.sign(TestReceipts.payload(), streamed: false),
                context: VerificationContext(appIdentifiers: ["com.example.game"], environments: [.production]))
        }
        #expect(setup.appleCalls == 0)
        await setup.fake.shutdown()
    }

    @Test func aReceiptListingOneTransactionManyTimesCostsOneLookup() async throws {
        let setup = try await Setup.start(receiptRoots: [try TestReceipts.signingPKI().root])
        try setup.fake.add("2000000000000501", environment: "Sandbox", ["productId": "gems.100"])
        let repeated = Array(repeating: (id: "2000000000000501", product: "gems.100"), count: 500)
        let purchases = try await setup.verify(
            try TestReceipts.sign(TestReceipts.payload(purchases: repeated), streamed: false), productID: "gems.100")
        #expect(purchases.map(\.transactionID) == ["2000000000000501"])
        #expect(setup.appleCalls == 1)
        await setup.fake.shutdown()
    }

    @Test func manyTransactionsCostAtMostTheCap() async throws {
        let setup = try await Setup.start(receiptRoots: [try TestReceipts.signingPKI().root])
        let ids = (0..<60).map { String(2_000_000_000_001_000 + $0) }
        for id in ids { try setup.fake.add(id, environment: "Sandbox", ["productId": "gems.100"]) }
        try setup.fake.add("2000000000009999", environment: "Sandbox", ["productId": "gems.500"])
        let listed = ids.map { (id: $0, product: "gems.100") } + [(id: "2000000000009999", product: "gems.500")]
        let receipt = try TestReceipts.sign(TestReceipts.payload(purchases: listed), streamed: false)

        // The requested product: its most recent transactions (listed last), no more than the cap.
        let requested = try await setup.verify(receipt, productID: "gems.100")
        #expect(AppReceiptValidator.defaultMaxLookups == 10)
        #expect(requested.map(\.transactionID) == Array(ids.suffix(10).reversed()))
        #expect(setup.appleCalls == 10)
        // No product named: the most recent transaction only.
        #expect(try await setup.verify(receipt).map(\.transactionID) == ["2000000000009999"])
        #expect(setup.appleCalls == 11)
        // A product the receipt does not hold: still one lookup, so the caller learns of the mismatch.
        #expect(try await setup.verify(receipt, productID: "gems.999").map(\.productID) == ["gems.500"])
        #expect(setup.appleCalls == 12)
        await setup.fake.shutdown()
    }

    /// A restore names an older transaction of the receipt: that one is asked about (and chosen),
    /// not the receipt's newest; one the receipt does not hold is refused as not in the evidence.
    @Test func aNamedTransactionIsTheOneLookedUp() async throws {
        let setup = try await Setup.start(receiptRoots: [try TestReceipts.signingPKI().root])
        let ids = (0..<30).map { String(2_000_000_000_002_000 + $0) }
        for id in ids { try setup.fake.add(id, environment: "Sandbox", ["productId": "gems.100"]) }
        let receipt = try TestReceipts.sign(
            TestReceipts.payload(purchases: ids.map { (id: $0, product: "gems.100") }), streamed: false)
        let named = try await setup.verify(receipt, transactionID: ids[3])
        #expect(named.map(\.transactionID) == [ids[3]])
        #expect(setup.appleCalls == 1)
        #expect(try VerifiedPurchase.choose(from: named, productID: nil, transactionID: ids[3]).transactionID == ids[3])
        let elsewhere = try await setup.verify(receipt, transactionID: "2000000000777777")
        #expect(throws: StoreVerificationError.self) {
            try VerifiedPurchase.choose(from: elsewhere, productID: nil, transactionID: "2000000000777777")
        }
        await setup.fake.shutdown()
    }

    @Test func noLookupAfterTheDeadlineOrOnceCancelled() async throws {
        let setup = try await Setup.start(receiptRoots: [try TestReceipts.signingPKI().root])
        try setup.fake.add("2000000000000501", environment: "Sandbox", ["productId": "gems.100"])
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        await Self.expectRefusal(.verifierError, reason: .storeUnavailable) {
            _ = try await setup.verify(receipt, productID: "gems.100", deadline: .now - .seconds(1))
        }
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await setup.verify(receipt, productID: "gems.100")
        }
        await Self.expectRefusal(.verifierError, reason: .storeUnavailable) { _ = try await cancelled.value }
        #expect(setup.appleCalls == 0)
        // The same receipt with time to spare goes through.
        #expect(try await setup.verify(receipt, productID: "gems.100", deadline: .now + .seconds(30)).count == 1)
        #expect(setup.appleCalls == 1)
        await setup.fake.shutdown()
    }

    @Test func verifyReceiptModeAlsoAuthenticatesFirst() async throws {
        let fake = try FakeVerifyReceipt()
        var configuration = try AppStoreConfiguration.fromEnvironment([
            "RECEIPTGATE_APPSTORE_SHARED_SECRET": "shh",
            "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_PRODUCTION_URL": fake.productionURL,
            "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_SANDBOX_URL": fake.sandboxURL,
        ])
        configuration.trustRoots = []
        let provider = AppStoreProvider(
            verifier: AppStoreSignedDataVerifier(trustRoots: []), configuration: configuration,
            http: HTTPClientForTests.fast())
        let context = VerificationContext(
            appIdentifiers: ["com.example.game", "com.starlink.crushlive"], environments: [.sandbox])
        let lookAlike = try ReceiptForgeries.LookAlikePKI().sign(try ReceiptForgeries.realContainer().content)
        for forged in [lookAlike, try TestReceipts.sign(TestReceipts.payload(), streamed: false)] {
            await Self.expectRefusal(.verificationFailed) {
                _ = try await provider.verify(evidence: forged, context: context)
            }
        }
        #expect(fake.calls.get().isEmpty)
        // Genuine under the test root, but the request's time is up: verifyReceipt is not called either.
        configuration.receiptTrustRoots = [try TestReceipts.signingPKI().root]
        let trusting = AppStoreProvider(
            verifier: AppStoreSignedDataVerifier(trustRoots: []), configuration: configuration,
            http: HTTPClientForTests.fast())
        let genuine = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        var late = context
        late.deadline = .now - .milliseconds(1)
        await Self.expectRefusal(.verifierError, reason: .storeUnavailable) {
            _ = try await trusting.verify(evidence: genuine, context: late)
        }
        #expect(fake.calls.get().isEmpty)
        #expect(
            try await trusting.verify(evidence: genuine, context: context).map(\.transactionID) == ["2000000000000501"])
        #expect(fake.calls.get() == ["production:shh", "sandbox:shh"])
        await fake.shutdown()
    }
}
