import AppStoreTestSupport
import Foundation
import ReceiptCore
import Testing

@testable import AppStore

/// The App Store proves what Apple signed, whatever its environment; whether the client accepts
/// that environment is the core's one rule, as for every store.
@Suite struct AppStoreEnvironmentRule {
    @Test func aSandboxTransactionIsProvenAndTheCoreRefusesItForAProductionOnlyClient() async throws {
        let pki = try AppleTestPKI()
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [pki.root]))
        let client = ClientInfo(
            clientID: "rgc_apple", gameID: 1,
            appIdentifiers: [AppStoreProvider.bundleIDKind.name: ["com.example.game"]],
            environments: [.production])
        let proven = try await provider.verify(
            evidence: try pki.sign(AppleTestPKI.transaction()),
            context: VerificationContext(
                appIdentifiers: ["com.example.game"], environments: [.production], client: client))
        let purchase = try #require(proven.first)
        #expect(purchase.environment == .sandbox)
        let refusal = #expect(throws: StoreVerificationError.self) {
            try VerificationChecks.acceptsEnvironment(of: purchase, client: client)
        }
        #expect(refusal?.code == .environmentMismatch && refusal?.reason == "ENVIRONMENT_NOT_ALLOWED")
    }
}
