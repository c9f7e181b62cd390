import COpenSSL
public import Foundation

/// A public key (P-256 or RSA) that verifies ES256, RS256 and PS256 signatures.
public struct PublicKey: Sendable {
    let key: EVPKey

    init(_ key: EVPKey) { self.key = key }

    /// From DER SubjectPublicKeyInfo.
    public init(subjectPublicKeyInfo der: Data) throws {
        key = try EVPKey.publicKey(subjectPublicKeyInfo: der)
    }

    /// From a `-----BEGIN PUBLIC KEY-----` PEM.
    public init(pem: String) throws {
        key = try EVPKey.publicKey(pem: Data(pem.utf8))
    }

    /// A P-256 key from its affine coordinates (as in a JWK's `x` and `y`).
    public init(p256X x: Data, y: Data) throws {
        guard x.count == 32, y.count == 32 else { throw CryptoError(.invalidKey, "P-256 coordinates must be 32 bytes") }
        // SubjectPublicKeyInfo for id-ecPublicKey / prime256v1 followed by the uncompressed point.
        let prefix = Hex.decode("3059301306072a8648ce3d020106082a8648ce3d030107034200")!
        key = try EVPKey.publicKey(subjectPublicKeyInfo: prefix + [0x04] + x + y)
        guard key.isP256 else { throw CryptoError(.invalidKey, "not a P-256 point") }
    }

    public var isP256: Bool { key.isP256 }
    public var isRSA: Bool { key.isRSA }

    public func subjectPublicKeyInfo() throws -> Data { try key.publicKeyDER() }

    /// ES256 with a JOSE raw `r || s` signature. A malformed signature is `false`.
    package func isValidES256(signature raw: Data, for message: some ContiguousBytes) -> Bool {
        guard key.isP256 else { return false }
        return key.verifyES256(raw: raw, message: message)
    }

    /// RS256 (RSASSA-PKCS1-v1_5 with SHA-256).
    public func isValidRS256(signature: Data, for message: some ContiguousBytes) -> Bool {
        guard key.isRSA else { return false }
        return key.verifySHA256(signature: signature, message: message)
    }
}

/// A private key (P-256 or RSA) that signs ES256 and RS256.
public struct PrivateKey: Sendable {
    let key: EVPKey

    public static func generateP256() throws -> PrivateKey {
        PrivateKey(key: try EVPKey.generate(algorithm: "EC") { EVP_PKEY_CTX_set_group_name($0, "P-256") })
    }

    /// For test fixtures only (the service signs nothing with RSA).
    package static func generateRSA(bits: Int = 2048) throws -> PrivateKey {
        PrivateKey(key: try EVPKey.generate(algorithm: "RSA") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, Int32(bits)) })
    }

    /// From PEM: PKCS#8 (`BEGIN PRIVATE KEY`, as in App Store `.p8` files and Google service
    /// accounts) or the traditional EC/RSA forms.
    public init(pem: String) throws {
        key = try EVPKey.privateKey(pem: Data(pem.utf8))
    }

    init(key: EVPKey) { self.key = key }

    public var isP256: Bool { key.isP256 }
    public var isRSA: Bool { key.isRSA }

    public var publicKey: PublicKey {
        get throws { try PublicKey(subjectPublicKeyInfo: key.publicKeyDER()) }
    }

    /// PKCS#8 PEM. Handle with care: this is the secret itself.
    public func pemRepresentation() throws -> String { try key.privateKeyPEM() }

    /// ES256: ECDSA P-256 over SHA-256, returned as JOSE raw `r || s` (64 bytes).
    package func signES256(_ message: some ContiguousBytes) throws -> Data {
        guard key.isP256 else { throw CryptoError(.invalidKey, "ES256 needs a P-256 key") }
        return try ECDSASignature.derToRaw(key.signSHA256(message), coordinateSize: 32)
    }

    /// ECDSA P-256 over SHA-256 as DER, the form X.509 and PKCS#7 use.
    /// For test fixtures only (certificates a test builds).
    package func signECDSASHA256DER(_ message: some ContiguousBytes) throws -> Data {
        guard key.isP256 else { throw CryptoError(.invalidKey, "ECDSA needs a P-256 key") }
        return try key.signSHA256(message)
    }

    /// RS256: RSASSA-PKCS1-v1_5 over SHA-256.
    package func signRS256(_ message: some ContiguousBytes) throws -> Data {
        guard key.isRSA else { throw CryptoError(.invalidKey, "RS256 needs an RSA key") }
        return try key.signSHA256(message)
    }
}
