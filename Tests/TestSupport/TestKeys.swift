package import Crypto
import Foundation

/// RSA keys made once per test process, on a thread of their own. Making a 2048-bit key takes a
/// busy core tens to hundreds of milliseconds; the fakes made two each on the test process's
/// cooperative threads, and a run spent seconds with both threads in key generation while every
/// other test's tasks waited. Each slot is its own key, so a test that needs "a key that is not
/// the fake's" still gets one.
package enum TestKeys {
    /// In the order they are made: the Google fakes' keys are wanted first and most.
    package enum RSASlot: Int, CaseIterable, Sendable {
        case googleServiceAccount, googleOIDC, unrelated, playLicense, lookAlikeRoot, lookAlikeIntermediate, lookAlikeLeaf, huaweiIAP
    }

    private static let maker = RSAKeyMaker()

    /// Waits (briefly, and only on a test's first use of a slot) until the slot's key is made.
    package static func rsa(_ slot: RSASlot) throws -> PrivateKey {
        try maker.key(slot)
    }
}

private final class RSAKeyMaker: @unchecked Sendable {
    private let condition = NSCondition()
    private var made: [TestKeys.RSASlot: Result<PrivateKey, any Error>] = [:]

    init() {
        Thread { [self] in
            for slot in TestKeys.RSASlot.allCases {
                let key = Result { try PrivateKey.generateRSA() }
                condition.lock()
                made[slot] = key
                condition.broadcast()
                condition.unlock()
            }
        }.start()
    }

    func key(_ slot: TestKeys.RSASlot) throws -> PrivateKey {
        condition.lock()
        defer { condition.unlock() }
        while made[slot] == nil { condition.wait() }
        return try made[slot]!.get()
    }
}
