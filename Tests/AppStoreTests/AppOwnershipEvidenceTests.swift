import AppStore
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import ReceiptCore
import Testing

/// How verify evidence is told to be a device's signed AppTransaction rather than a purchase: a
/// quick look at the payload, then the proof; the look never accepts anything on its own.
@Suite struct AppOwnershipEvidence {
    @Test func onlyAnAppTransactionsPayloadIsTakenForOne() throws {
        let pki = try AppleTestPKI()
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [pki.root]))
        let appTransaction = try pki.sign([
            "receiptType": "Sandbox", "bundleId": "com.example.game", "appTransactionId": "704289575718046473",
        ])
        #expect(provider.isAppOwnershipEvidence(appTransaction))
        #expect(!provider.isAppOwnershipEvidence(try pki.sign(AppleTestPKI.transaction())))
        #expect(!provider.isAppOwnershipEvidence(try pki.sign(AppleTestPKI.transaction(["receiptType": "Sandbox"]))))
        #expect(!provider.isAppOwnershipEvidence("bm90IGEgcmVjZWlwdA=="))
        #expect(!provider.isAppOwnershipEvidence("a.b.c"))
        #expect(!provider.isAppOwnershipEvidence(String(repeating: "a.", count: 40_000)))
    }

    @Test func aProofWithoutAnAppTransactionIDOrEnvironmentIsRefused() async throws {
        let pki = try AppleTestPKI()
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [pki.root]))
        let context = VerificationContext(appIdentifiers: ["com.example.game"], environments: [.sandbox])
        let proven = try await provider.proveAppOwnership(
            evidence: try pki.sign([
                "receiptType": "Sandbox", "bundleId": "com.example.game", "appTransactionId": "1",
                "originalPlatform": "Future OS",
            ]), context: context)
        #expect(proven.appTransactionID == "1")
        #expect(proven.originalPlatform == "Future OS")
        await #expect(throws: StoreVerificationError.self) {
            _ = try await provider.proveAppOwnership(
                evidence: try pki.sign(["receiptType": "Sandbox", "bundleId": "com.example.game"]), context: context)
        }
        await #expect(throws: StoreVerificationError.self) {
            _ = try await provider.proveAppOwnership(
                evidence: try pki.sign(["bundleId": "com.example.game", "appTransactionId": "1"]), context: context)
        }
    }
}
