import COpenSSL
import Foundation

/// Owns one EVP_PKEY. OpenSSL 3 allows concurrent signing and verification with one key object,
/// and the key is never mutated after creation, hence `@unchecked Sendable`.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer
    /// Asked of OpenSSL once: every ES256 verification checks it.
    let isP256: Bool
    /// Reused verification contexts, for P-256 keys (see `ECVerifyContexts`).
    let ecContexts: ECVerifyContexts?

    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
        isP256 = Self.isP256(pointer)
        ecContexts = isP256 ? ECVerifyContexts(key: pointer) : nil
    }

    deinit { EVP_PKEY_free(pointer) }

    var isRSA: Bool { EVP_PKEY_get_base_id(pointer) == NID_rsaEncryption }

    private static func isP256(_ pointer: OpaquePointer) -> Bool {
        guard EVP_PKEY_get_base_id(pointer) == NID_X9_62_id_ecPublicKey else { return false }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1 else { return false }
        let group = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return group == "prime256v1" || group == "P-256"
    }

    static func generate(algorithm: String, configure: (OpaquePointer) -> Int32) throws -> EVPKey {
        guard let context = EVP_PKEY_CTX_new_from_name(nil, algorithm, nil) else {
            throw openSSLError("EVP_PKEY_CTX_new_from_name(\(algorithm))")
        }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, configure(context) > 0,
            EVP_PKEY_generate(context, &key) == 1, let key
        else { throw openSSLError("generate \(algorithm) key") }
        return EVPKey(taking: key)
    }

    static func privateKey(pem: Data) throws -> EVPKey {
        let bio = try MemoryBIO(pem)
        guard let key = PEM_read_bio_PrivateKey(bio.pointer, nil, nil, nil) else {
            throw openSSLError(.invalidKey, "private key PEM")
        }
        return EVPKey(taking: key)
    }

    static func publicKey(pem: Data) throws -> EVPKey {
        let bio = try MemoryBIO(pem)
        guard let key = PEM_read_bio_PUBKEY(bio.pointer, nil, nil, nil) else {
            throw openSSLError(.invalidKey, "public key PEM")
        }
        return try checkedPublicKey(taking: key)
    }

    /// Every public key from outside (SPKI, PEM, certificates, JWK coordinates) comes through
    /// here. OpenSSL parses P-256's point at infinity (the single byte 00) as a key, and ECDSA
    /// verification with it then accepts a signature anyone can compute from the message alone;
    /// `EVP_PKEY_public_check_quick` refuses that point and any point off the curve (the full
    /// check adds n·Q = O, which holds for every such point on a curve of cofactor 1, as P-256 is).
    /// Takes ownership of `pointer`, freeing it on refusal.
    static func checkedPublicKey(taking pointer: OpaquePointer) throws -> EVPKey {
        guard EVP_PKEY_get_base_id(pointer) == NID_X9_62_id_ecPublicKey else { return EVPKey(taking: pointer) }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            EVP_PKEY_free(pointer)
            throw openSSLError("EVP_PKEY_CTX_new_from_pkey")
        }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_public_check_quick(context) == 1 else {
            EVP_PKEY_free(pointer)
            throw openSSLError(.invalidKey, "EC public key is the point at infinity or not on its curve")
        }
        return EVPKey(taking: pointer)
    }

    static func publicKey(subjectPublicKeyInfo der: Data) throws -> EVPKey {
        let key = der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_PUBKEY(nil, &cursor, raw.count)
        }
        guard let key else { throw openSSLError(.invalidKey, "SubjectPublicKeyInfo DER") }
        return try checkedPublicKey(taking: key)
    }

    /// DER SubjectPublicKeyInfo.
    func publicKeyDER() throws -> Data {
        let length = i2d_PUBKEY(pointer, nil)
        guard length > 0 else { throw openSSLError("i2d_PUBKEY") }
        var buffer = [UInt8](repeating: 0, count: Int(length))
        let written = buffer.withUnsafeMutableBufferPointer { out -> Int32 in
            var cursor = out.baseAddress
            return i2d_PUBKEY(pointer, &cursor)
        }
        guard written == length else { throw openSSLError("i2d_PUBKEY") }
        return Data(buffer)
    }

    /// PKCS#8 PEM of the private key.
    func privateKeyPEM() throws -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw openSSLError("BIO_new") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pointer, nil, nil, 0, nil, nil) == 1 else {
            throw openSSLError("PEM_write_bio_PrivateKey")
        }
        return String(decoding: readAll(bio), as: UTF8.self)
    }

    /// A signature over `message` with SHA-256 (DER for ECDSA, PKCS#1 v1.5 for RSA).
    func signSHA256(_ message: some ContiguousBytes) throws -> Data {
        // A NULL digest would mean "the key type's default", not SHA-256.
        guard let digest = sha256Method else {
            throw CryptoError(.openSSLFailure, "SHA-256 is not available from OpenSSL")
        }
        guard let context = EVP_MD_CTX_new() else { throw openSSLError("EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, digest, nil, pointer) == 1 else {
            throw openSSLError(.invalidKey, "EVP_DigestSignInit")
        }
        return try withNonNullBytes(message) { bytes, count in
            var length = 0
            guard EVP_DigestSign(context, nil, &length, bytes, count) == 1 else { throw openSSLError("EVP_DigestSign") }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_DigestSign(context, &signature, &length, bytes, count) == 1 else {
                throw openSSLError("EVP_DigestSign")
            }
            return Data(signature.prefix(length))
        }
    }

    /// Whether ES256 verifications use the key's own fixed-base table yet (tests and benchmarks ask).
    var hasFixedKeyTable: Bool { ecContexts?.hasFixedKeyTable ?? false }

    /// ES256 verifications counted toward the key's table (tests ask).
    var es256VerificationsCounted: Int { ecContexts?.countedVerifications ?? 0 }

    /// Verifies a JOSE ES256 signature (r ‖ s) of a P-256 key; false for any other key.
    func verifyES256(raw: Data, message: some ContiguousBytes) -> Bool {
        ecContexts?.verifyES256(raw: raw, message: message) ?? false
    }

    /// Verifies a JOSE ES256 signature with OpenSSL's verifier only (no fixed-key table, nor a
    /// count toward one); false for any key but P-256.
    func verifyES256WithOpenSSL(raw: Data, message: some ContiguousBytes) -> Bool {
        ecContexts?.verifyES256WithOpenSSL(raw: raw, message: message) ?? false
    }

    /// Verifies a SHA-256 signature (DER for ECDSA). Any failure is `false`, never a throw: a
    /// wrong signature is an expected outcome.
    func verifySHA256(signature: Data, message: some ContiguousBytes) -> Bool {
        if let ecContexts { return ecContexts.verifySHA256(signature: signature, message: message) }
        guard let digest = sha256Method, let context = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(context)
            _ = drainOpenSSLErrors()
        }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, pointer) == 1 else { return false }
        return withNonNullBytes(signature) { sig, sigCount in
            withNonNullBytes(message) { bytes, count in
                EVP_DigestVerify(context, sig, sigCount, bytes, count) == 1
            }
        }
    }
}

/// SHA-256 fetched once. OpenSSL 3 looks an algorithm up in its provider store on every
/// implicit use (`EVP_sha256()`); an explicitly fetched method skips that on the hot path.
var sha256Method: OpaquePointer? { DigestMethod.sha256.method }

func readAll(_ bio: OpaquePointer) -> Data {
    var result = Data()
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let read = BIO_read(bio, &chunk, Int32(chunk.count))
        if read <= 0 { break }
        result.append(contentsOf: chunk.prefix(Int(read)))
    }
    return result
}
