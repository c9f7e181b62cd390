import COpenSSL
import Foundation
import Synchronization
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
    ///
    /// Tables in the whole process are at most `maxTables`, counted while their keys live: a key
    /// that is freed gives its table back. When all are held and another key reaches the
    /// threshold, the least recently used table gives way to it, and the key that lost its table
    /// verifies through OpenSSL until it has verified `verificationsBeforeTable` more signatures.
    /// (Seventeen keys in steady use at once thus trade tables at most once per thousand
    /// verifications each, a table build costing some 300.)
    static let verificationsBeforeTable = 1_000
    static let maxTables = 16
    static let tables = TableBudget(limit: maxTables)

    private let key: OpaquePointer
    private let idle = IdleList<OpaquePointer>(limit: maxIdle) { EVP_PKEY_CTX_free($0) }
    private let lock = NSLock()  // guards verifications, fixedKey, building, tableGrant
    private var verifications = 0
    private var fixedKey: P256FixedKeyVerifier?
    private var building = false
    /// Counts the tables granted and taken away, so a build finishing after its grant was taken
    /// back is discarded.
    private var tableGrant = 0
    /// When the table last verified (the budget's `tick()`), for the least-recently-used rule;
    /// an atomic, so the table's verifications take no lock.
    let lastTableUse = Atomic<UInt64>(0)
    private let tables: TableBudget

    /// `key` must outlive this object (its owner, `EVPKey`, holds both).
    init(key: OpaquePointer, tables: TableBudget = ECVerifyContexts.tables) {
        self.key = key
        self.tables = tables
    }

    deinit {
        tables.release(ObjectIdentifier(self))
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
        lastTableUse.store(tables.tick(), ordering: .relaxed)
        return digest.withUnsafeBytes { digest in
            raw.withUnsafeBytes { signature in
                fixedKey.isValid(
                    digest: digest, r: UnsafeRawBufferPointer(rebasing: signature[0..<32]),
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
    /// not the cooperative pool's); requests meanwhile verify the ordinary way. With the process's
    /// tables all held, the least recently used one is taken for this key (`TableBudget`).
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
            building = true
            return point
        }
        guard let point else { return }
        // Read before the grant: a grant taken back from here on shows as a change.
        let grant = lock.withLock { tableGrant }
        // Outside this key's lock: the budget may take the table of another key, under its lock.
        guard tables.take(for: self) else {
            lock.withLock { building = false }
            return
        }
        // Weak: a key freed while its table waits to be built is not kept alive for it.
        let accepted = SharedWorkers.computations.submit { [weak self] _ in
            guard let self else { return }
            let built = P256FixedKeyVerifier(publicPoint: point)
            if built == nil { tables.release(ObjectIdentifier(self)) }
            lock.withLock {
                building = built == nil  // a key OpenSSL cannot tabulate is not tried again
                if tableGrant == grant { fixedKey = built } else { building = false }  // given away meanwhile
            }
        }
        if !accepted {
            tables.release(ObjectIdentifier(self))
            lock.withLock { building = false }
        }
    }

    /// The budget took this key's table for a key in more recent use: verify through OpenSSL,
    /// and count toward a table afresh.
    func giveUpTable() {
        lock.withLock {
            fixedKey = nil
            verifications = 0
            tableGrant += 1
        }
    }

    /// Verifies a DER ECDSA signature over SHA-256(`message`). Any failure is `false`.
    func verifySHA256(signature: Data, message: some ContiguousBytes) -> Bool {
        guard let digest = SHA256.digest(message), let context = take() else { return false }
        let valid = signature.withUnsafeBytes { sig in
            digest.withUnsafeBytes { hash in
                guard let sigBase = sig.baseAddress, let hashBase = hash.baseAddress else { return false }
                return EVP_PKEY_verify(
                    context, sigBase.assumingMemoryBound(to: UInt8.self), sig.count,
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

/// The fixed-base tables that exist in the process: at most `limit`, each held by a live key.
/// When all are held, a key that earns one takes the least recently used.
final class TableBudget: Sendable {
    private struct Holder {
        weak var owner: ECVerifyContexts?
    }

    private let limit: Int
    private let holders = Mutex<[ObjectIdentifier: Holder]>([:])

    init(limit: Int) { self.limit = limit }

    /// Table uses counted, as the order of uses (`lastTableUse`).
    private let uses = Atomic<UInt64>(0)

    func tick() -> UInt64 { uses.wrappingAdd(1, ordering: .relaxed).newValue }

    /// Tables held now.
    var held: Int { holders.withLock { $0.count } }

    func holds(_ owner: ECVerifyContexts) -> Bool { holders.withLock { $0[ObjectIdentifier(owner)] != nil } }

    /// A table for `owner`: false if none can be had (never, once the budget is spent, while
    /// every holder is `owner` itself). The key that gives way is told outside the budget's lock.
    func take(for owner: ECVerifyContexts) -> Bool {
        let id = ObjectIdentifier(owner)
        let (granted, displaced) = holders.withLock { holders -> (Bool, ECVerifyContexts?) in
            if holders[id] != nil { return (true, nil) }
            holders = holders.filter { $0.value.owner != nil }  // keys being freed give theirs back in deinit too
            // A new holder counts as just used: a table being built is not the first to give way.
            owner.lastTableUse.store(tick(), ordering: .relaxed)
            guard holders.count >= limit else {
                holders[id] = Holder(owner: owner)
                return (true, nil)
            }
            let oldest = holders.compactMap { entry in entry.value.owner.map { (entry.key, $0) } }
                .filter { $0.0 != id }
                .min { $0.1.lastTableUse.load(ordering: .relaxed) < $1.1.lastTableUse.load(ordering: .relaxed) }
            guard let (oldestID, oldestOwner) = oldest else { return (false, nil) }
            holders[oldestID] = nil
            holders[id] = Holder(owner: owner)
            return (true, oldestOwner)
        }
        displaced?.giveUpTable()
        return granted
    }

    /// `owner` holds no table (any more): freed, or its table could not be built.
    func release(_ owner: ObjectIdentifier) {
        holders.withLock { _ = $0.removeValue(forKey: owner) }
    }
}
