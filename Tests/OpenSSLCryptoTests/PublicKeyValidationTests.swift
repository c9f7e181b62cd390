import Foundation
import TestSupport
import Testing

@testable import OpenSSLCrypto

/// A public key is checked when it is built, by every path that builds one: P-256's point at
/// infinity (the byte 00, for which anyone can make a verifying signature) and points off the
/// curve are no keys (Wycheproof's ecdsa_secp256r1 "invalid public key" cases).
@Suite struct PublicKeyValidation {
    static let invalidKey = CryptoError(.invalidKey, "")

    /// A real key's coordinates, and the same x with y one bit off (not on the curve).
    static func coordinates() throws -> (x: Data, y: Data, offCurveY: Data) {
        let spki = try PrivateKey.generateP256().publicKey.subjectPublicKeyInfo()
        let x = Data(spki.suffix(64).prefix(32)), y = Data(spki.suffix(32))
        var offCurveY = y
        offCurveY[offCurveY.startIndex + 31] ^= 1
        return (x, y, offCurveY)
    }

    @Test func thePointAtInfinityIsNoKeyWhetherDEROrPEM() throws {
        #expect(throws: Self.invalidKey) { try PublicKey(subjectPublicKeyInfo: CertificateSurgery.p256PointAtInfinity) }
        let pem =
            "-----BEGIN PUBLIC KEY-----\n\(CertificateSurgery.p256PointAtInfinity.base64EncodedString())\n-----END PUBLIC KEY-----\n"
        #expect(throws: Self.invalidKey) { try PublicKey(pem: pem) }
    }

    @Test func aPointOffTheCurveIsNoKeyWhetherSPKIOrJWKCoordinates() throws {
        let (x, y, offCurveY) = try Self.coordinates()
        #expect(throws: Self.invalidKey) {
            try PublicKey(subjectPublicKeyInfo: CertificateSurgery.p256SubjectPublicKeyInfo(x: x, y: offCurveY))
        }
        #expect(throws: Self.invalidKey) { try PublicKey(p256X: x, y: offCurveY) }
        #expect(throws: Self.invalidKey) { try PublicKey(p256X: Data(count: 32), y: Data(count: 32)) }
        // The refusal is about the point: the same encoding of the real point is a key.
        #expect(try PublicKey(subjectPublicKeyInfo: CertificateSurgery.p256SubjectPublicKeyInfo(x: x, y: y)).isP256)
        #expect(try PublicKey(p256X: x, y: y).isP256)
    }

    @Test func aCertificateCarryingThePointAtInfinityChainsButYieldsNoKey() throws {
        let pki = try TestPKI()
        let forged = try CertificateSurgery.replacingKey(
            of: pki.leaf, with: CertificateSurgery.p256PointAtInfinity, issuerKey: pki.intermediateKey)
        // Signed by the real intermediate, the certificate chains: the key is the only thing wrong
        // with it, so reading the key is where it must be refused.
        try CertificateChainVerifier(trustRoots: [pki.root]).verify(
            leaf: forged, intermediates: [pki.intermediate], at: Date())
        #expect(throws: Self.invalidKey) { try forged.publicKey }
        #expect(try pki.leaf.publicKey.isP256)
    }

    /// The fixed-key table (ES256's fast path for a key in steady use) is built from a point
    /// alone; it refuses the same points itself.
    @Test func theFixedKeyTableRefusesThePointAtInfinityAndPointsOffTheCurve() throws {
        let (x, y, offCurveY) = try Self.coordinates()
        #expect(P256FixedKeyVerifier(publicPoint: [0]) == nil)
        #expect(P256FixedKeyVerifier(publicPoint: [4] + Array(x) + Array(offCurveY)) == nil)
        #expect(P256FixedKeyVerifier(publicPoint: [4] + Array(x) + Array(y)) != nil)
    }
}
