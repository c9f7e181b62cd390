import COpenSSL
public import Foundation

extension PublicKey {
    /// PS256: RSASSA-PSS (RFC 8017 §8.1) with SHA-256 and MGF1-SHA-256, the salt of whatever
    /// length the signer chose. OpenSSL recovers it from the signature (`RSA_PSS_SALTLEN_AUTO`);
    /// the encoding leaves room for at most emLen − hLen − 2 bytes (222 for a 2048-bit key), and a
    /// salt claiming more cannot decode. RFC 7518 asks for a salt as long as the hash, but signers
    /// differ, and a PSS signature of any salt length is as hard to forge.
    ///
    /// `false` for a wrong or malformed signature, a signature not exactly the modulus's length
    /// (OpenSSL would take a shorter one as if left-padded with zeros), an RSA key under 2048 bits,
    /// and any key that is not an rsaEncryption RSA key.
    public func isValidPS256(signature: Data, for message: some ContiguousBytes) -> Bool {
        guard key.isRSA, EVP_PKEY_get_bits(key.pointer) >= 2048, signature.count == Int(EVP_PKEY_get_size(key.pointer)),
            let digest = SHA256.digest(message)
        else { return false }
        defer { _ = drainOpenSSLErrors() }
        guard let context = key.pss256Context(signing: false, saltLength: RSA_PSS_SALTLEN_AUTO) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        return withNonNullBytes(signature) { sig, sigCount in
            EVP_PKEY_verify(context, sig, sigCount, digest, digest.count) == 1
        }
    }
}

extension PrivateKey {
    /// PS256 (RSASSA-PSS, SHA-256, MGF1-SHA-256) with a fresh random salt of `saltLength` bytes,
    /// from 0 to the key's maximum (emLen − hLen − 2). Any RSA key size, so that a test can make a
    /// signature the verifier must refuse for its key alone.
    /// For test fixtures only (the service signs nothing with RSA).
    package func signPS256(_ message: some ContiguousBytes, saltLength: Int = 32) throws -> Data {
        guard key.isRSA else { throw CryptoError(.invalidKey, "PS256 needs an RSA key") }
        // Negative lengths are OpenSSL's special values (digest length, auto, maximum): refused.
        let maximum = (Int(EVP_PKEY_get_bits(key.pointer)) + 6) / 8 - SHA256.byteCount - 2
        guard (0...maximum).contains(saltLength) else {
            throw CryptoError(.invalidKey, "PS256 salt of \(saltLength) bytes: this key allows 0 to \(maximum)")
        }
        let digest = try SHA256.hash(message)
        guard let context = key.pss256Context(signing: true, saltLength: Int32(saltLength)) else {
            throw openSSLError(.invalidKey, "PS256 signing context")
        }
        defer { EVP_PKEY_CTX_free(context) }
        return try digest.withUnsafeBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            var length = 0
            guard EVP_PKEY_sign(context, nil, &length, bytes.baseAddress, bytes.count) == 1 else {
                throw openSSLError("EVP_PKEY_sign")
            }
            var signature = [UInt8](repeating: 0, count: length)
            guard EVP_PKEY_sign(context, &signature, &length, bytes.baseAddress, bytes.count) == 1 else {
                throw openSSLError("EVP_PKEY_sign")
            }
            return Data(signature.prefix(length))
        }
    }
}

extension EVPKey {
    /// A context for one PS256 signature or verification of a SHA-256 digest: PSS padding, SHA-256
    /// for the digest and for MGF1 (named, not left to defaults), and the salt length. The caller
    /// frees it; nil if OpenSSL refuses any step (the reason stays on OpenSSL's error queue).
    func pss256Context(signing: Bool, saltLength: Int32) -> OpaquePointer? {
        guard let digest = sha256Method, let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else { return nil }
        guard (signing ? EVP_PKEY_sign_init(context) : EVP_PKEY_verify_init(context)) == 1,
            EVP_PKEY_CTX_set_rsa_padding(context, RSA_PKCS1_PSS_PADDING) > 0,
            EVP_PKEY_CTX_set_signature_md(context, digest) > 0,
            EVP_PKEY_CTX_set_rsa_mgf1_md(context, digest) > 0,
            EVP_PKEY_CTX_set_rsa_pss_saltlen(context, saltLength) > 0
        else {
            EVP_PKEY_CTX_free(context)
            return nil
        }
        return context
    }
}
