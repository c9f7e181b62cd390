import Foundation
package import OpenSSLCrypto

/// RSA keys for tests, one per slot, each made the first time a test asks for it and kept for the
/// rest of the process. Making a 2048-bit key takes a busy core tens to hundreds of milliseconds,
/// so it happens on a thread of its own, never on the cooperative threads every other test's
/// tasks are waiting for. Each slot is its own key, so a test that needs "a key that is not the
/// fake's" still gets one.
///
/// Nothing is made ahead of a request: a process may exit as soon as its last test returns, and
/// OpenSSL's exit handlers free what a key generation still running would use (the process then
/// crashes at exit). A key is made only while a caller waits for it, so none is being made once
/// every caller has returned (Tests/TestKeysExitProbe and `TestKeysAtExit` check this).
package enum TestKeys {
    package enum RSASlot: Int, CaseIterable, Sendable {
        case googleServiceAccount, googleOIDC, unrelated, playLicense, lookAlikeRoot, lookAlikeIntermediate,
            lookAlikeLeaf, huaweiIAP
    }

    private static let maker = RSAKeyMaker()

    /// The slot's key; the first call for a slot waits while it is made.
    package static func rsa(_ slot: RSASlot) throws -> PrivateKey {
        try maker.key(slot)
    }
}

/// Makes the keys callers are waiting for, one at a time, on one thread started by the first
/// request. Between requests the thread sleeps on the condition, holding no OpenSSL state.
private final class RSAKeyMaker: @unchecked Sendable {
    private let condition = NSCondition()
    // All three guarded by `condition`.
    private var made: [TestKeys.RSASlot: Result<PrivateKey, any Error>] = [:]
    /// Asked for and not made yet, in the order asked; each has a caller waiting for it.
    private var wanted: [TestKeys.RSASlot] = []
    private var started = false

    func key(_ slot: TestKeys.RSASlot) throws -> PrivateKey {
        condition.lock()
        defer { condition.unlock() }
        if made[slot] == nil, !wanted.contains(slot) {
            wanted.append(slot)
            if !started {
                started = true
                Thread { [self] in makeWantedKeys() }.start()
            }
            condition.broadcast()
        }
        while true {
            if let key = made[slot] { return try key.get() }
            condition.wait()
        }
    }

    private func makeWantedKeys() {
        condition.lock()
        while true {
            guard let slot = wanted.first else {
                condition.wait()
                continue
            }
            condition.unlock()
            let key = Result { try PrivateKey.generateRSA() }
            condition.lock()
            wanted.removeFirst()
            made[slot] = key
            condition.broadcast()
        }
    }
}
