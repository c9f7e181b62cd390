import COpenSSL
import Foundation

/// Verification contexts for one EC key, initialized once and reused. OpenSSL 3 builds a fresh
/// `EVP_PKEY_CTX` (provider lookup, key export) for every `EVP_DigestVerifyInit`, which costs about
/// as much as the P-256 verification itself; `openssl speed` initializes once and verifies in a
/// loop, and so does this. A context is used by one thread at a time: it is taken from the
/// idle list (or made) and given back afterwards.
final class ECVerifyContexts: @unchecked Sendable {
    /// Contexts kept idle beyond this are freed (a burst does not pin memory).
    static let maxIdle = 8

    private let key: OpaquePointer
    private let lock = NSLock()  // guards idle
    private var idle: [OpaquePointer] = []

    /// `key` must outlive this object (its owner, `EVPKey`, holds both).
    init(key: OpaquePointer) { self.key = key }

    deinit { idle.forEach { EVP_PKEY_CTX_free($0) } }

    /// Verifies a DER ECDSA signature over SHA-256(`message`). Any failure is `false`.
    func verifySHA256(signature: Data, message: some ContiguousBytes) -> Bool {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let hashed = withNonNullBytes(message) { pointer, count in EVP_Digest(pointer, count, &digest, &length, sha256Method, nil) }
        guard hashed == 1, length == 32, let context = take() else { return false }
        let valid = signature.withUnsafeBytes { sig in
            digest.withUnsafeBytes { hash in
                guard let sigBase = sig.baseAddress, let hashBase = hash.baseAddress else { return false }
                return EVP_PKEY_verify(context, sigBase.assumingMemoryBound(to: UInt8.self), sig.count,
                                       hashBase.assumingMemoryBound(to: UInt8.self), hash.count) == 1
            }
        }
        if !valid { _ = drainOpenSSLErrors() }
        giveBack(context)
        return valid
    }

    private func take() -> OpaquePointer? {
        if let context = lock.withLock({ idle.popLast() }) { return context }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { return nil }
        guard EVP_PKEY_verify_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, sha256Method) == 1 else {
            EVP_PKEY_CTX_free(context)
            _ = drainOpenSSLErrors()
            return nil
        }
        return context
    }

    private func giveBack(_ context: OpaquePointer) {
        let kept = lock.withLock { () -> Bool in
            guard idle.count < Self.maxIdle else { return false }
            idle.append(context)
            return true
        }
        if !kept { EVP_PKEY_CTX_free(context) }
    }
}
