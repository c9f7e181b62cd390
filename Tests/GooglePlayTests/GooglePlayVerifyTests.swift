import Foundation
import GooglePlay
import GooglePlayTestSupport
import HTTPClient
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

/// The provider against a fake Google on loopback: evidence forms, normalization, Google's errors.
@Suite struct GooglePlayVerify {
    static func provider(
        _ google: FakeGooglePlay, retries: Int = 3, now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> GooglePlayProvider {
        GooglePlayProvider(
            configuration: try google.configuration(), http: FakeGooglePlay.http(retries: retries),
            logger: Logger(minimumLevel: .error), now: now)
    }

    static func context(
        packages: Set<String> = ["com.example.game"], environments: Set<StoreEnvironment> = [.production, .sandbox],
        settings: [String: [String]] = [:], credentials: [String: String] = [:], clientID: String = "rgc_test"
    ) -> VerificationContext {
        VerificationContext(
            appIdentifiers: packages, environments: environments,
            client: ClientInfo(
                clientID: clientID, gameID: 42,
                appIdentifiers: [GooglePlayProvider.packageNameKind.name: Array(packages)], environments: environments,
                settings: settings),
            credentials: credentials)
    }

    static func refusal(_ body: () async throws -> Void) async -> StoreVerificationError? {
        do { try await body(); return nil } catch let error as StoreVerificationError { return error } catch {
            return nil
        }
    }

    @Test func aBareTokenIsProvenWithProductsV2AndNormalized() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(
            token: "tok-bare-1", orderID: "GPA.3301-2345-6789-01234", accountID: "acct-7", quantity: 2)
        let purchases = try await Self.provider(google).verify(evidence: "tok-bare-1", context: Self.context())
        let purchase = try #require(purchases.first)
        #expect(purchase.store == .googlePlay)
        #expect(purchase.environment == .production)
        #expect(purchase.transactionID == "GPA.3301-2345-6789-01234")
        #expect(purchase.originalTransactionID == "GPA.3301-2345-6789-01234")
        #expect(purchase.productID == "gems100")
        #expect(purchase.quantity == 2)
        #expect(purchase.storefront == "VN")
        #expect(purchase.accountToken == "acct-7")
        #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_716_389_123))
        #expect(purchase.appIdentifier == "com.example.game")
        #expect(google.hits("productsv2") == 1 && google.hits("products") == 0)
        await google.shutdown()
    }

    /// The caller's deadline (the core sets it around a verification's store calls) bounds the
    /// retries: with a second left, Google's server error is not tried again.
    @Test func aVerifyWithOneSecondLeftMakesNoSecondAttempt() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-deadline-1")
        let provider = try Self.provider(google)
        // The access token first, with time enough: the second below is all the store call's.
        _ = try await OutboundDeadline.$current.withValue(.now + .seconds(30)) {
            try await provider.verify(evidence: "tok-deadline-1", context: Self.context())
        }
        #expect(google.hits("productsv2") == 1)
        google.failFirst("productsv2", [503])
        let error = await Self.refusal {
            _ = try await OutboundDeadline.$current.withValue(.now + .seconds(1)) {
                try await provider.verify(evidence: "tok-deadline-1", context: Self.context())
            }
        }
        #expect(error?.isRetryable == true, "\(String(describing: error))")
        #expect(google.hits("productsv2") == 2, "one attempt, not retried")
        google.failFirst("productsv2", [503])
        _ = try await OutboundDeadline.$current.withValue(.now + .seconds(30)) {
            try await provider.verify(evidence: "tok-deadline-1", context: Self.context())
        }
        #expect(google.hits("productsv2") == 4, "with time enough, tried again")
        await google.shutdown()
    }

    @Test func purchaseJSONAndUnityReceiptAreReadWithProductsV2() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-json-1", test: true)
        let json =
            #"{"orderId":"GPA.3301-2345-6789-01234","packageName":"com.example.game","productId":"gems100","purchaseTime":1716389123000,"purchaseState":0,"purchaseToken":"tok-json-1","quantity":1,"acknowledged":false}"#
        let provider = try Self.provider(google)
        let fromJSON = try await provider.verify(evidence: json, context: Self.context())
        #expect(fromJSON.first?.environment == .sandbox)  // a license tester's purchase
        let payload = String(
            decoding: try JSONSerialization.data(withJSONObject: ["json": json, "signature": ""]), as: UTF8.self)
        let unity = String(
            decoding: try JSONSerialization.data(withJSONObject: [
                "Store": "GooglePlay", "TransactionID": "tok-json-1", "Payload": payload,
            ]),
            as: UTF8.self)
        let fromUnity = try await provider.verify(evidence: unity, context: Self.context())
        #expect(fromUnity.first?.transactionID == "GPA.3301-2345-6789-01234")
        #expect(google.hits("productsv2") == 2 && google.state.deprecatedCalls.get().isEmpty)
        // A production-only client? The tester's purchase is proven as sandbox; the core's one
        // environment rule refuses it (412), as it does every store's.
        let productionOnly = Self.context(environments: [.production])
        let tester = try #require(try await provider.verify(evidence: json, context: productionOnly).first)
        #expect(tester.environment == .sandbox)
        let client = try #require(productionOnly.client)
        let refusal = #expect(throws: StoreVerificationError.self) {
            try VerificationChecks.acceptsEnvironment(of: tester, client: client)
        }
        #expect(refusal?.code == .environmentMismatch && refusal?.reason == "ENVIRONMENT_NOT_ALLOWED")
        // Another app's purchase JSON.
        let other = json.replacingOccurrences(of: "com.example.game", with: "com.other.game")
        #expect(
            await Self.refusal { _ = try await provider.verify(evidence: other, context: Self.context()) }?.code
                == .bundleMismatch)
        await google.shutdown()
    }

    @Test(arguments: [(1, "PURCHASE_CANCELED"), (2, "PURCHASE_PENDING")])
    func pendingAndCanceledAreNotPurchases(state: Int, reason: String) async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-state", state: state)
        let provider = try Self.provider(google)
        for evidence in [
            "tok-state", #"{"packageName":"com.example.game","productId":"gems100","purchaseToken":"tok-state"}"#,
        ] {
            let error = await Self.refusal {
                _ = try await provider.verify(evidence: evidence, context: Self.context())
            }
            #expect(error?.code == .verificationFailed)
            #expect(error?.reason == reason)
        }
        await google.shutdown()
    }

    @Test func googlesErrorsBecomeTheSharedCodes() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-err")
        let provider = try Self.provider(google)
        // Unknown token: 404 from products and subscriptions → 422.
        let unknown = await Self.refusal {
            _ = try await provider.verify(evidence: "tok-unknown", context: Self.context())
        }
        #expect(unknown?.code == .verificationFailed)
        #expect(unknown?.reason == "PURCHASE_NOT_FOUND")
        // 403: the service account lacks access → 502 naming the permission problem.
        google.failFirst("productsv2", [403])
        let denied = await Self.refusal { _ = try await provider.verify(evidence: "tok-err", context: Self.context()) }
        #expect(denied?.code == .verifierError)
        #expect(denied?.reason == "GOOGLE_PERMISSION_DENIED")
        #expect(denied?.message.contains("Users and permissions") == true)
        // 503 then 429: retried with back-off, then answered.
        google.failFirst("productsv2", [503, 429])
        #expect(try await provider.verify(evidence: "tok-err", context: Self.context()).count == 1)
        // Down for longer than the retries: 502, retryable.
        google.failFirst("productsv2", [503, 503, 503])
        let down = await Self.refusal { _ = try await provider.verify(evidence: "tok-err", context: Self.context()) }
        #expect(down?.code == .verifierError)
        #expect(down?.isRetryable == true)
        // Malformed evidence never reaches Google.
        let before = google.hits("productsv2")
        #expect(
            await Self.refusal { _ = try await provider.verify(evidence: "not a token!", context: Self.context()) }?
                .code == .verificationFailed)
        #expect(google.hits("productsv2") == before)
        await google.shutdown()
    }

    @Test func theBearerTokenIsSharedByConcurrentRequestsAndRefreshedOnceOn401() async throws {
        let google = try FakeGooglePlay()
        for index in 0..<8 { try google.addProduct(token: "tok-c\(index)", orderID: "GPA.0000-0000-0000-0000\(index)") }
        google.state.tokenDelay.set(.milliseconds(200))
        let provider = try Self.provider(google)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<8 {
                group.addTask { _ = try await provider.verify(evidence: "tok-c\(index)", context: Self.context()) }
            }
            try await group.waitForAll()
        }
        #expect(google.hits("token") == 1)
        #expect(await provider.tokens.exchanges == 1)
        // Google revokes it: one 401, one new exchange, the request still succeeds.
        google.revokeIssuedTokens()
        google.state.tokenDelay.set(.zero)
        _ = try await provider.verify(evidence: "tok-c0", context: Self.context())
        #expect(google.hits("token") == 2)
        await google.shutdown()
    }

    @Test func aClientsOwnKeyIsUsedInsteadOfTheServicesOne() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-own")
        var configuration = try google.configuration()
        configuration.serviceAccountKey = nil
        let provider = GooglePlayProvider(
            configuration: configuration, http: FakeGooglePlay.http(), logger: Logger(minimumLevel: .error))
        let none = await Self.refusal { _ = try await provider.verify(evidence: "tok-own", context: Self.context()) }
        #expect(none?.reason == "GOOGLE_NOT_CONFIGURED")
        let own = Self.context(credentials: [
            GooglePlayProvider.Setting.serviceAccountKey: try google.serviceAccountJSON()
        ])
        #expect(try await provider.verify(evidence: "tok-own", context: own).count == 1)
        // A key Google does not know (another project's): the token endpoint refuses it → 502 naming it.
        let stranger = Self.context(credentials: [
            GooglePlayProvider.Setting.serviceAccountKey:
                try google.serviceAccountJSON(key: try TestKeys.rsa(.unrelated))
        ])
        #expect(
            await Self.refusal { _ = try await provider.verify(evidence: "tok-own", context: stranger) }?.reason
                == "GOOGLE_PERMISSION_DENIED")
        await google.shutdown()
    }

    @Test func subscriptionsFollowTheirLinkedTokensToTheFirstOrder() async throws {
        let google = try FakeGooglePlay()
        try google.addSubscription(
            token: "sub-old", latestOrderID: "GPA.1111-2222-3333-44444..5", state: "SUBSCRIPTION_STATE_EXPIRED")
        try google.addSubscription(
            token: "sub-new", productID: "vip.yearly", latestOrderID: "GPA.5555-6666-7777-88888..1",
            linkedToken: "sub-old",
            accountID: "acct-9")
        let purchase = try #require(
            try await Self.provider(google).verify(evidence: "sub-new", context: Self.context()).first)
        #expect(purchase.transactionID == "GPA.5555-6666-7777-88888..1")
        #expect(purchase.originalTransactionID == "GPA.1111-2222-3333-44444")
        #expect(purchase.productID == "vip.yearly")
        #expect(purchase.kind == .autoRenewableSubscription)
        #expect(purchase.accountToken == "acct-9")
        #expect((purchase.expiresDate ?? .distantPast) > Date())
        let pending = try FakeGooglePlay()
        try pending.addSubscription(token: "sub-pending", state: "SUBSCRIPTION_STATE_PENDING")
        #expect(
            await Self.refusal {
                _ = try await Self.provider(pending).verify(evidence: "sub-pending", context: Self.context())
            }?.reason
                == "PURCHASE_PENDING")
        await google.shutdown()
        await pending.shutdown()
    }

    @Test func aForgedPurchaseJSONIsRefusedLocallyWithTheLicenseKey() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-signed")
        let licenseKey = try TestKeys.rsa(.playLicense)
        let settings = [
            GooglePlayProvider.Setting.licenseKey: [Base64.encode(try licenseKey.publicKey.subjectPublicKeyInfo())]
        ]
        let json =
            #"{"orderId":"GPA.3301-2345-6789-01234","packageName":"com.example.game","productId":"gems100","purchaseToken":"tok-signed"}"#
        let signature = Base64.encode(try licenseKey.signSHA1WithRSA(Data(json.utf8)))
        func wrapped(_ json: String, _ signature: String) throws -> String {
            String(
                decoding: try JSONSerialization.data(withJSONObject: ["json": json, "signature": signature]),
                as: UTF8.self)
        }
        let provider = try Self.provider(google)
        #expect(
            try await provider.verify(evidence: try wrapped(json, signature), context: Self.context(settings: settings))
                .count == 1)
        let forged = json.replacingOccurrences(of: "gems100", with: "gems999")
        let refused = await Self.refusal {
            _ = try await provider.verify(
                evidence: try wrapped(forged, signature), context: Self.context(settings: settings))
        }
        #expect(refused?.reason == "INVALID_SIGNATURE")
        #expect(google.hits("productsv2") == 1)  // the forgery never reached Google
        await google.shutdown()
    }

    @Test func thePackageNameComesFromTheEvidenceTheRequestOrTheOnlyRegisteredOne() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-pkg", package: "com.example.second")
        let provider = try Self.provider(google)
        let two: Set<String> = ["com.example.game", "com.example.second"]
        let ambiguous = await Self.refusal {
            _ = try await provider.verify(evidence: "tok-pkg", context: Self.context(packages: two))
        }
        #expect(ambiguous?.code == .missingFields)
        // The pipeline narrows the identifiers to the request's package_name.
        #expect(
            try await provider.verify(evidence: "tok-pkg", context: Self.context(packages: ["com.example.second"]))
                .first?.appIdentifier
                == "com.example.second")
        await google.shutdown()
    }
}
