package import Foundation
package import OpenSSLCrypto

/// A throwaway signing chain shaped like Apple's App Store chain: a self-signed root, an
/// intermediate with the marker extension Apple's WWDR intermediate carries, and a leaf with the
/// App Store signing marker, all P-256. `AppStoreSignedDataVerifier` accepts what the leaf signs
/// only when told to trust this root, never with Apple's. The `dev purchase` command and the
/// benchmark sign with it; the root's and the intermediate's keys are not kept: only the leaf
/// signs afterwards, and a key never kept cannot leak.
package struct AppleShapedChain {
    package let root: Certificate
    package let intermediate: Certificate
    package let leaf: Certificate
    package let leafKey: PrivateKey

    /// The `x5c` header value, leaf first, as Apple sends it.
    package var x5c: [String] { [leaf, intermediate, root].map { $0.derEncoded.base64EncodedString() } }

    package init(root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: PrivateKey) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
    }

    /// A fresh chain valid from a day ago until `until`, its certificates named `names`.
    package init(names: (root: String, intermediate: String, leaf: String), until: Date) throws {
        let from = Date(timeIntervalSinceNow: -86_400)
        let rootKey = try PrivateKey.generateP256(), intermediateKey = try PrivateKey.generateP256()
        leafKey = try .generateP256()
        var builder = CertificateBuilder(subjectCommonName: names.root, notValidBefore: from, notValidAfter: until)
        builder.isCertificateAuthority = true
        root = try builder.build(subjectKey: rootKey, issuer: nil, issuerKey: rootKey)

        builder = CertificateBuilder(subjectCommonName: names.intermediate, notValidBefore: from, notValidAfter: until)
        builder.isCertificateAuthority = true
        builder.serialNumber = 2
        builder.customExtensions = [(AppStoreSignedDataVerifier.intermediateMarkerOID, Self.asn1Null, false)]
        intermediate = try builder.build(subjectKey: intermediateKey, issuer: root, issuerKey: rootKey)

        builder = CertificateBuilder(subjectCommonName: names.leaf, notValidBefore: from, notValidAfter: until)
        builder.serialNumber = 3
        builder.customExtensions = [(AppStoreSignedDataVerifier.leafMarkerOID, Self.asn1Null, false)]
        leaf = try builder.build(subjectKey: leafKey, issuer: intermediate, issuerKey: intermediateKey)
    }

    /// The compact JWS of `payload`: ES256, `x5c` leaf → intermediate → root.
    package func sign(payload: Data) throws -> String {
        try CompactJWS.sign(payload: payload, header: JWSHeader(x5c: x5c), key: leafKey)
    }

    /// Apple's marker extensions hold an ASN.1 NULL; only their presence is checked.
    private static let asn1Null = Data([0x05, 0x00])
}
