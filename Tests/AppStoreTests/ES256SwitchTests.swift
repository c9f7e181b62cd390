import AppStoreTestSupport
import Foundation
import TestSupport
import Testing

@testable import AppStore
@testable import OpenSSLCrypto

/// `RECEIPTGATE_ES256_FIXED_KEY=off` gives the signed-data verifier OpenSSL's ES256 verifier: the
/// same tokens are accepted and refused, and the leaf key, however often it signs, is never
/// counted toward a fixed-key table (every signature goes through `EVP_PKEY_verify`).
@Suite struct ES256Switch {
    static let sandbox = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox])

    /// Verifies one genuine token more often than a key needs to earn a table, refuses a
    /// tampered twin, and returns the leaf key as the verifier cached it.
    static func verifyInSteadyUse(_ verifier: AppStoreSignedDataVerifier, pki: AppleTestPKI) throws -> PublicKey {
        let token = try pki.sign(AppleTestPKI.transaction())
        var refused = 0
        for _ in 0...ECVerifyContexts.verificationsBeforeTable {
            if (try? verifier.verifyTransaction(token, expecting: sandbox)) == nil { refused += 1 }
        }
        #expect(refused == 0, "genuine tokens refused")
        let parts = token.split(separator: ".").map(String.init)
        var signature = try #require(Base64.urlDecode(parts[2]))
        signature[9] ^= 0x10
        expectRejection(.signatureInvalid) {
            _ = try verifier.verifyTransaction(
                "\(parts[0]).\(parts[1]).\(Base64.urlEncode(signature))", expecting: sandbox)
        }
        return try #require(verifier.cache.lookup(header: Data(parts[0].utf8), at: Date()))
    }

    @Test func switchedOffTheLeafKeyIsNeverCountedTowardATable() throws {
        let pki = try AppleTestPKI()
        let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root], es256: OpenSSLES256Verifier())
        let leaf = try Self.verifyInSteadyUse(verifier, pki: pki)
        #expect(leaf.key.es256VerificationsCounted == 0)
        #expect(!leaf.key.hasFixedKeyTable)
    }

    @Test func switchedOnTheLeafKeyEarnsItsTable() async throws {
        let pki = try AppleTestPKI()
        let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root])
        let leaf = try Self.verifyInSteadyUse(verifier, pki: pki)
        #expect(leaf.key.es256VerificationsCounted == ECVerifyContexts.verificationsBeforeTable)
        #expect(await eventually { leaf.key.hasFixedKeyTable })
        let token = try pki.sign(AppleTestPKI.transaction(["transactionId": "2000000222222222"]))
        #expect(try verifier.verifyTransaction(token, expecting: Self.sandbox).transactionId == "2000000222222222")
    }
}
