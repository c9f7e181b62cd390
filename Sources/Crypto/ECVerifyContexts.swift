import COpenSSL
import Foundation
import Workers

/// Verification contexts for one EC key, initialized once and reused. OpenSSL 3 builds a fresh
/// `EVP_PKEY_CTX` (provider lookup, key export) for every `EVP_DigestVerifyInit`, which costs about
/// as much as the P-256 verification itself; `openssl speed` initializes once and verifies in a
/// loop, and so does this. A context is used by one thread at a time: it is taken from the
/// idle list (or made) and given back afterwards.
final class ECVerifyContexts: @unchecked Sendable {
    /// Contexts kept idle beyond this are freed (a burst does not pin memory).
    static let maxIdle = 8

    /// Verifications with one key before its fixed-base table is built (`P256FixedKeyVerifier`):
    /// the table costs about as much as 300 verifications and 150 KB, so only a key in steady use
    /// (Apple's leaf) earns one.
    static let verificationsBeforeTable = 1_000
    /// Tables in the whole process at most, whatever keys come and go.
    static let maxTables = 16
    private static let tables = TableBudget(limit: maxTables)

    private let key: OpaquePointer
    private let idle = IdleList<OpaquePointer>(limit: maxIdle) { EVP_PKEY_CTX_free($0) }
    private let lock = NSLock()  // guards verifications, fixedKey, building
    private var verifications = 0
    private var fixedKey: P256FixedKeyVerifier?
    private var building = false

    /// `key` must outlive this object (its owner, `EVPKey`, holds both).
    init(key: OpaquePointer) { self.key = key }

    deinit {
        if fixedKey != nil { Self.tables.release() }
    }

    /// Verifies a JOSE ES256 signature (r ‖ s, 32 bytes each) over SHA-256(`message`): with the
    /// key's fixed-base table once it has one, else through OpenSSL's verifier.
    func verifyES256(raw: Data, message: some ContiguousBytes) -> Bool {
        guard raw.count == 64 else { return false }
        guard let fixedKey = lock.withLock({ fixedKey }) else {
            guard let der = try? ECDSASignature.rawToDER(raw, coordinateSize: 32) else { return false }
            let valid = verifySHA256(signature: der, message: message)
            if valid { countVerified() }
            return valid
        }
        guard let digest = SHA256.digest(message) else { return false }
        return digest.withUnsafeBytes { digest in
            raw.withUnsafeBytes { signature in
                fixedKey.isValid(digest: digest, r: UnsafeRawBufferPointer(rebasing: signature[0..<32]),
                                 s: UnsafeRawBufferPointer(rebasing: signature[32..<64]))
            }
        }
    }

    /// Verifies a JOSE ES256 signature through OpenSSL's verifier, whether or not the key has a
    /// table, and without counting toward one.
    func verifyES256WithOpenSSL(raw: Data, message: some ContiguousBytes) -> Bool {
        guard raw.count == 64, let der = try? ECDSASignature.rawToDER(raw, coordinateSize: 32) else { return false }
        return verifySHA256(signature: der, message: message)
    }

    var hasFixedKeyTable: Bool { lock.withLock { fixedKey != nil } }

    /// Verified signatures counted toward a table so far (tests ask).
    var countedVerifications: Int { lock.withLock { verifications } }

    /// Counts a signature that verified (refused ones earn a key nothing: replayed junk cannot win
    /// a table) and, at the threshold, builds the table on a shared worker thread (27 ms of CPU,
    /// not the cooperative pool's); requests meanwhile verify the ordinary way. With the process's tables all taken, the budget is asked again
    /// only every `verificationsBeforeTable` verifications.
    private func countVerified() {
        let point = lock.withLock { () -> [UInt8]? in
            guard fixedKey == nil, !building else { return nil }
            verifications += 1
            guard verifications % Self.verificationsBeforeTable == 0 else { return nil }
            // Read now, on the caller's thread: the builder holds no reference to the EVP_PKEY.
            guard let point = P256FixedKeyVerifier.publicPoint(of: key) else {
                building = true  // no point OpenSSL can give us: never tabulated
                return nil
            }
            guard Self.tables.take() else { return nil }
            building = true
            return point
        }
        guard let point else { return }
        let accepted = SharedWorkers.computations.submit { [self] _ in
            let built = P256FixedKeyVerifier(publicPoint: point)
            if built == nil { Self.tables.release() }
            lock.withLock {
                fixedKey = built
                building = built == nil  // a key OpenSSL cannot tabulate is not tried again
            }
        }
        if !accepted {
            Self.tables.release()
            lock.withLock { building = false }
        }
    }

    /// Verifies a DER ECDSA signature over SHA-256(`message`). Any failure is `false`.
    func verifySHA256(signature: Data, message: some ContiguousBytes) -> Bool {
        guard let digest = SHA256.digest(message), let context = take() else { return false }
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
        idle.take { [key] in
            guard let digest = sha256Method, let context = EVP_PKEY_CTX_new_from_pkey(nil, key, nil) else { return nil }
            guard EVP_PKEY_verify_init(context) == 1, EVP_PKEY_CTX_set_signature_md(context, digest) == 1 else {
                EVP_PKEY_CTX_free(context)
                _ = drainOpenSSLErrors()
                return nil
            }
            return context
        }
    }

    private func giveBack(_ context: OpaquePointer) { idle.giveBack(context) }
}

/// A count of things that may exist at once in the process.
final class TableBudget: @unchecked Sendable {
    private let lock = NSLock()  // guards used
    private let limit: Int
    private var used = 0

    init(limit: Int) { self.limit = limit }

    func take() -> Bool {
        lock.withLock {
            guard used < limit else { return false }
            used += 1
            return true
        }
    }

    func release() { lock.withLock { used -= 1 } }
}
