import COpenSSL
public import Foundation

extension PublicKey {
    /// An RSA key from its modulus and public exponent, big-endian unsigned (a JWK's `n` and `e`).
    public init(rsaModulus modulus: Data, exponent: Data) throws {
        let n = Self.stripLeadingZeros(modulus), e = Self.stripLeadingZeros(exponent)
        guard n.count >= 256, n.count <= 1024, !e.isEmpty, e.count <= 8 else {
            throw CryptoError(.invalidKey, "RSA modulus must be 2048 to 8192 bits and the exponent at most 8 bytes")
        }
        // SubjectPublicKeyInfo { rsaEncryption, NULL } BIT STRING { RSAPublicKey { n, e } }.
        let rsaPublicKey = DER.sequence(DER.integer(n) + DER.integer(e))
        let algorithm = DER.sequence(
            Data([0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00]))
        try self.init(subjectPublicKeyInfo: DER.sequence(algorithm + DER.element(0x03, Data([0]) + rsaPublicKey)))
        guard isRSA else { throw CryptoError(.invalidKey, "not an RSA key") }
    }

    /// RSASSA-PKCS1-v1_5 with SHA-1: the scheme of Google Play's purchase signatures (the Play
    /// licensing key signs `Purchase.getOriginalJson()` this way). Nothing else should use SHA-1.
    public func isValidSHA1WithRSA(signature: Data, for message: some ContiguousBytes) -> Bool {
        guard key.isRSA, let context = EVP_MD_CTX_new() else { return false }
        defer {
            EVP_MD_CTX_free(context)
            _ = drainOpenSSLErrors()
        }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha1(), nil, key.pointer) == 1 else { return false }
        return withNonNullBytes(signature) { sig, sigCount in
            withNonNullBytes(message) { bytes, count in
                EVP_DigestVerify(context, sig, sigCount, bytes, count) == 1
            }
        }
    }

    private static func stripLeadingZeros(_ data: Data) -> Data {
        Data(data.drop { $0 == 0 })
    }
}

extension PrivateKey {
    /// RSASSA-PKCS1-v1_5 with SHA-1, for tests that stand in for Google Play's signing key.
    /// For test fixtures only (Google's legacy licence signatures).
    package func signSHA1WithRSA(_ message: some ContiguousBytes) throws -> Data {
        guard key.isRSA, let context = EVP_MD_CTX_new() else {
            throw CryptoError(.invalidKey, "SHA1withRSA needs an RSA key")
        }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha1(), nil, key.pointer) == 1 else {
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

    /// The RSA modulus and exponent of the public half (for a JWK), big-endian.
    package func rsaPublicComponents() throws -> (modulus: Data, exponent: Data) {
        guard key.isRSA else { throw CryptoError(.invalidKey, "not an RSA key") }
        var n: OpaquePointer?, e: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key.pointer, "n", &n) == 1, let n, EVP_PKEY_get_bn_param(key.pointer, "e", &e) == 1,
            let e
        else {
            throw openSSLError("EVP_PKEY_get_bn_param")
        }
        defer { BN_free(n); BN_free(e) }
        func bytes(_ number: OpaquePointer) -> Data {
            var buffer = [UInt8](repeating: 0, count: Int((BN_num_bits(number) + 7) / 8))
            _ = BN_bn2bin(number, &buffer)
            return Data(buffer)
        }
        return (bytes(n), bytes(e))
    }
}

/// Just enough DER to wrap an RSA public key.
private enum DER {
    static func length(_ count: Int) -> Data {
        if count < 0x80 { return Data([UInt8(count)]) }
        var bytes: [UInt8] = []
        var value = count
        while value > 0 { bytes.insert(UInt8(value & 0xff), at: 0); value >>= 8 }
        return Data([0x80 | UInt8(bytes.count)] + bytes)
    }

    static func element(_ tag: UInt8, _ content: Data) -> Data { Data([tag]) + length(content.count) + content }
    static func sequence(_ content: Data) -> Data { element(0x30, content) }
    /// A non-negative INTEGER: a leading zero keeps the top bit from reading as a sign.
    static func integer(_ magnitude: Data) -> Data {
        element(0x02, (magnitude.first ?? 0) >= 0x80 ? Data([0]) + magnitude : magnitude)
    }
}
