import AppStore
package import Foundation
package import OpenSSLCrypto

/// A throwaway PKI shaped like Apple's (root → intermediate with 1.2.840.113635.100.6.2.1 →
/// leaf with 1.2.840.113635.100.6.11.1), minted at test time, and a signer that produces
/// App Store-style JWS (ES256, `x5c` of leaf, intermediate, root).
package struct AppleTestPKI: Sendable {
    package static let intermediateOID = AppStoreSignedDataVerifier.intermediateMarkerOID
    package static let leafOID = AppStoreSignedDataVerifier.leafMarkerOID

    package struct Options: Sendable {
        package var validFrom = Date(timeIntervalSinceNow: -86_400 * 30)
        package var validUntil = Date(timeIntervalSinceNow: 86_400 * 365)
        package var leafValidFrom: Date?
        package var leafValidUntil: Date?
        package var leafMarker = true
        package var intermediateMarker = true
        /// OCSP responders named in the leaf's and the intermediate's AIA extension.
        package var leafOCSPURL: String?
        package var intermediateOCSPURL: String?
        package init() {}
    }

    package let rootKey: PrivateKey, root: Certificate
    package let intermediateKey: PrivateKey, intermediate: Certificate
    package let leafKey: PrivateKey, leaf: Certificate

    package init(_ options: Options = Options()) throws {
        rootKey = try .generateP256()
        var rootBuilder = CertificateBuilder(
            subjectCommonName: "Test Apple Root", notValidBefore: options.validFrom, notValidAfter: options.validUntil)
        rootBuilder.isCertificateAuthority = true
        root = try rootBuilder.build(subjectKey: rootKey, issuer: nil, issuerKey: rootKey)

        intermediateKey = try .generateP256()
        var intermediateBuilder = CertificateBuilder(
            subjectCommonName: "Test WWDR Intermediate", notValidBefore: options.validFrom,
            notValidAfter: options.validUntil)
        intermediateBuilder.isCertificateAuthority = true
        intermediateBuilder.serialNumber = 2
        intermediateBuilder.ocspResponderURL = options.intermediateOCSPURL
        if options.intermediateMarker {
            intermediateBuilder.customExtensions = [(Self.intermediateOID, Data([0x05, 0x00]), false)]
        }
        intermediate = try intermediateBuilder.build(subjectKey: intermediateKey, issuer: root, issuerKey: rootKey)

        leafKey = try .generateP256()
        var leafBuilder = CertificateBuilder(
            subjectCommonName: "Test App Store Signing",
            notValidBefore: options.leafValidFrom ?? options.validFrom,
            notValidAfter: options.leafValidUntil ?? options.validUntil)
        leafBuilder.serialNumber = 3
        leafBuilder.ocspResponderURL = options.leafOCSPURL
        if options.leafMarker { leafBuilder.customExtensions = [(Self.leafOID, Data([0x05, 0x00]), false)] }
        leaf = try leafBuilder.build(subjectKey: leafKey, issuer: intermediate, issuerKey: intermediateKey)
    }

    /// The x5c header value for this PKI (leaf, intermediate, root), in standard base64.
    package var x5c: [String] { [leaf, intermediate, root].map { $0.derEncoded.base64EncodedString() } }

    /// Signs a JSON object payload as Apple does.
    package func sign(_ payload: [String: any Sendable], x5c: [String]? = nil, alg: String = "ES256") throws -> String {
        let body = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try Self.sign(payloadBytes: body, header: ["alg": alg, "x5c": x5c ?? self.x5c], key: leafKey)
    }

    package static func sign(payloadBytes: Data, header: [String: any Sendable], key: PrivateKey) throws -> String {
        let headerBytes = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let input = Base64.urlEncode(headerBytes) + "." + Base64.urlEncode(payloadBytes)
        return input + "." + Base64.urlEncode(try key.signES256(Data(input.utf8)))
    }

    /// A transaction payload with sensible defaults, overridable field by field.
    package static func transaction(_ overrides: [String: any Sendable] = [:]) -> [String: any Sendable] {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var payload: [String: any Sendable] = [
            "transactionId": "2000000111111111", "originalTransactionId": "2000000111111111",
            "bundleId": "com.example.game", "productId": "gems.100", "purchaseDate": now - 60_000,
            "originalPurchaseDate": now - 60_000, "quantity": 1, "type": "Consumable",
            "inAppOwnershipType": "PURCHASED", "signedDate": now, "environment": "Sandbox",
            "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441",
            "price": 990, "currency": "USD",
        ]
        for (key, value) in overrides { payload[key] = value }
        return payload
    }
}
