import ReceiptCore
import Testing

/// What a store's failed call answers, decided by its kind alone, the same for every store.
@Suite struct StoreAPIErrorAnswers {
    static let stores = ["Apple", "Google", "Huawei", "Amazon"]

    @Test(arguments: stores)
    func aKindAnswersTheSameSharedCodeForEveryStore(store: String) {
        let expected: [StoreAPIError.Kind: (ErrorCode, retryable: Bool)] = [
            .notFound: (.verificationFailed, false), .refused: (.verificationFailed, false),
            .forged: (.verificationFailed, false), .credentialsRefused: (.verifierError, false),
            .notConfigured: (.verifierError, false), .unavailable: (.verifierError, true),
            .malformedAnswer: (.verifierError, true),
        ]
        #expect(Set(expected.keys) == Set(StoreAPIError.Kind.allCases))
        for (kind, answer) in expected {
            let refusal = StoreAPIError(kind, store: store, reason: "A_REASON", "what happened", status: 400)
                .verificationError
            #expect(refusal.code == answer.0, "\(store) \(kind)")
            #expect(refusal.isRetryable == answer.retryable, "\(store) \(kind)")
            #expect(refusal.reason == "A_REASON" && refusal.message == "what happened")
        }
    }

    @Test func aStoreThatAskedToWaitSaysHowLongToTheNextPollRun() {
        let limited = StoreAPIError(
            .unavailable, store: "Google", reason: "GOOGLE_UNAVAILABLE", "rate limited", status: 429,
            retryAfter: .seconds(120))
        #expect((limited as any StoreAskedToWait).retryAfter == .seconds(120))
        #expect(limited.operatorHelp.hasPrefix("rate limited by Google; the next run resumes"))
        let refused = StoreAPIError(
            .credentialsRefused, store: "Apple", reason: "APP_STORE_MISCONFIGURED", "key refused", status: 401,
            fix: "check RECEIPTGATE_APPSTORE_API_KEY_ID")
        #expect(refused.operatorHelp.hasSuffix("; check RECEIPTGATE_APPSTORE_API_KEY_ID"))
    }

    /// Every store's purchase of an environment the client does not accept is refused by the one
    /// rule, with one code and reason: no store answers it another way.
    @Test(arguments: ["app_store", "google_play", "huawei_appgallery", "amazon_appstore"])
    func anEnvironmentMismatchIsAnsweredAlikeForEveryStore(store: String) throws {
        let purchase = VerifiedPurchase(store: StoreID(rawValue: store), environment: .sandbox, transactionID: "t1")
        let productionOnly = ClientInfo(clientID: "c1", gameID: nil, environments: [.production])
        let refusal = #expect(throws: StoreVerificationError.self) {
            try VerificationChecks.acceptsEnvironment(of: purchase, client: productionOnly)
        }
        #expect(refusal?.code == .environmentMismatch)
        #expect(refusal?.reason == "ENVIRONMENT_NOT_ALLOWED")
        let both = ClientInfo(clientID: "c1", gameID: nil, environments: [.production, .sandbox])
        try VerificationChecks.acceptsEnvironment(of: purchase, client: both)
    }
}
