import Foundation
import Testing

@testable import OpenSSLCrypto

/// The two ES256 verifiers an operator chooses between (`RECEIPTGATE_ES256_FIXED_KEY`): the
/// OpenSSL one never counts a key toward a fixed-base table, so with it every signature goes
/// through `EVP_PKEY_verify`; both give the same verdicts.
@Suite struct ES256VerifierChoice {
    @Test func theOpenSSLVerifierNeverCountsAKeyTowardATableTheDefaultDoes() throws {
        let privateKey = try PrivateKey.generateP256()
        let key = try privateKey.publicKey
        let message = Data("switch".utf8)
        let raw = try privateKey.signES256(message)
        var refused = 0
        for _ in 0..<ECVerifyContexts.verificationsBeforeTable + 1
        where !OpenSSLES256Verifier().isValid(signature: raw, for: message, key: key) {
            refused += 1
        }
        #expect(refused == 0)
        #expect(key.key.es256VerificationsCounted == 0)
        #expect(!key.key.hasFixedKeyTable)

        for _ in 0..<10 { #expect(FixedKeyES256Verifier().isValid(signature: raw, for: message, key: key)) }
        #expect(key.key.es256VerificationsCounted == 10, "the default counts genuine signatures toward a table")
    }

    @Test(arguments: [true, false])
    func bothRefuseWhatIsNotAGenuineSignature(fixedKey: Bool) throws {
        let verifier: any ES256Verifier = fixedKey ? FixedKeyES256Verifier() : OpenSSLES256Verifier()
        let privateKey = try PrivateKey.generateP256()
        let key = try privateKey.publicKey
        let message = Data("genuine".utf8)
        let raw = try privateKey.signES256(message)
        #expect(verifier.isValid(signature: raw, for: message, key: key))
        #expect(!verifier.isValid(signature: raw, for: Data("genuinf".utf8), key: key))
        var flipped = raw
        flipped[7] ^= 0x01
        #expect(!verifier.isValid(signature: flipped, for: message, key: key))
        #expect(!verifier.isValid(signature: raw.prefix(63), for: message, key: key))
        #expect(!verifier.isValid(signature: Data(count: 64), for: message, key: key))
        #expect(!verifier.isValid(signature: raw, for: message, key: try PrivateKey.generateP256().publicKey))
    }
}
