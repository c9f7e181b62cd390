public import Crypto
import AppStore
public import Foundation

/// A throwaway PKI shaped like Apple's (root → intermediate with 1.2.840.113635.100.6.2.1 →
/// leaf with 1.2.840.113635.100.6.11.1), minted at test time, and a signer that produces
/// App Store-style JWS (ES256, `x5c` of leaf, intermediate, root).
public struct AppleTestPKI: Sendable {
    public static let intermediateOID = AppStoreSignedDataVerifier.intermediateMarkerOID
    public static let leafOID = AppStoreSignedDataVerifier.leafMarkerOID

    public struct Options: Sendable {
        public var validFrom = Date(timeIntervalSinceNow: -86_400 * 30)
        public var validUntil = Date(timeIntervalSinceNow: 86_400 * 365)
        public var leafValidFrom: Date?
        public var leafValidUntil: Date?
        public var leafMarker = true
        public var intermediateMarker = true
        /// OCSP responders named in the leaf's and the intermediate's AIA extension.
        public var leafOCSPURL: String?
        public var intermediateOCSPURL: String?
        public init() {}
    }

    public let rootKey: PrivateKey, root: Certificate
    public let intermediateKey: PrivateKey, intermediate: Certificate
    public let leafKey: PrivateKey, leaf: Certificate

    public init(_ options: Options = Options()) throws {
        rootKey = try .generateP256()
        var rootBuilder = CertificateBuilder(subjectCommonName: "Test Apple Root", notValidBefore: options.validFrom, notValidAfter: options.validUntil)
        rootBuilder.isCertificateAuthority = true
        root = try rootBuilder.build(subjectKey: rootKey, issuer: nil, issuerKey: rootKey)

        intermediateKey = try .generateP256()
        var intermediateBuilder = CertificateBuilder(subjectCommonName: "Test WWDR Intermediate", notValidBefore: options.validFrom, notValidAfter: options.validUntil)
        intermediateBuilder.isCertificateAuthority = true
        intermediateBuilder.serialNumber = 2
        intermediateBuilder.ocspResponderURL = options.intermediateOCSPURL
        if options.intermediateMarker { intermediateBuilder.customExtensions = [(Self.intermediateOID, Data([0x05, 0x00]), false)] }
        intermediate = try intermediateBuilder.build(subjectKey: intermediateKey, issuer: root, issuerKey: rootKey)

        leafKey = try .generateP256()
        var leafBuilder = CertificateBuilder(subjectCommonName: "Test App Store Signing",
                                             notValidBefore: options.leafValidFrom ?? options.validFrom,
                                             notValidAfter: options.leafValidUntil ?? options.validUntil)
        leafBuilder.serialNumber = 3
        leafBuilder.ocspResponderURL = options.leafOCSPURL
        if options.leafMarker { leafBuilder.customExtensions = [(Self.leafOID, Data([0x05, 0x00]), false)] }
        leaf = try leafBuilder.build(subjectKey: leafKey, issuer: intermediate, issuerKey: intermediateKey)
    }

    /// The x5c header value for this PKI (leaf, intermediate, root), in standard base64.
    public var x5c: [String] { [leaf, intermediate, root].map { $0.derEncoded.base64EncodedString() } }

    /// Signs a JSON object payload as Apple does.
    public func sign(_ payload: [String: any Sendable], x5c: [String]? = nil, alg: String = "ES256") throws -> String {
        let body = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try Self.sign(payloadBytes: body, header: ["alg": alg, "x5c": x5c ?? self.x5c], key: leafKey)
    }

    public static func sign(payloadBytes: Data, header: [String: any Sendable], key: PrivateKey) throws -> String {
        let headerBytes = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        let input = Base64.urlEncode(headerBytes) + "." + Base64.urlEncode(payloadBytes)
        return input + "." + Base64.urlEncode(try key.signES256(Data(input.utf8)))
    }

    /// A transaction payload with sensible defaults, overridable field by field.
    public static func transaction(_ overrides: [String: any Sendable] = [:]) -> [String: any Sendable] {
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
