import Foundation
import OpenSSLCrypto
import Testing

/// The password helpers the account dialect awaits (they run on shared worker threads) keep
/// `hashPassword` and `verifyPassword`'s meaning.
@Suite struct ScryptOffThePool {
    @Test func aHashMadeOffThePoolVerifiesOnlyItsOwnPassword() async throws {
        let hash = try await Scrypt.hashPasswordOffThePool("correct horse")
        #expect(Scrypt.verifyPassword("correct horse", hash: hash))
        #expect(await Scrypt.verifyPasswordOffThePool("correct horse", hash: hash))
        #expect(!(await Scrypt.verifyPasswordOffThePool("correct horsE", hash: hash)))
        #expect(!(await Scrypt.verifyPasswordOffThePool("correct horse", hash: "scrypt$1$1$1$$")))
    }
}
