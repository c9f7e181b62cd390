import AppStore
import Crypto
import Foundation

/// A throwaway Apple-shaped chain (root → WWDR-marked intermediate → App-Store-marked leaf) and
/// ES256 JWS signed with it, so the benchmark needs no corpus and no test code.
struct BenchPKI {
    let root: Certificate
    private let leafKey: PrivateKey
    private let x5c: [String]

    init() throws {
        let from = Date(timeIntervalSinceNow: -86_400), until = Date(timeIntervalSinceNow: 86_400 * 30)
        let rootKey = try PrivateKey.generateP256(), intermediateKey = try PrivateKey.generateP256()
        leafKey = try .generateP256()
        var builder = CertificateBuilder(subjectCommonName: "Bench Root", notValidBefore: from, notValidAfter: until)
        builder.isCertificateAuthority = true
        root = try builder.build(subjectKey: rootKey, issuer: nil, issuerKey: rootKey)
        builder = CertificateBuilder(subjectCommonName: "Bench Intermediate", notValidBefore: from, notValidAfter: until)
        builder.isCertificateAuthority = true
        builder.serialNumber = 2
        builder.customExtensions = [(AppStoreSignedDataVerifier.intermediateMarkerOID, Data([0x05, 0x00]), false)]
        let intermediate = try builder.build(subjectKey: intermediateKey, issuer: root, issuerKey: rootKey)
        builder = CertificateBuilder(subjectCommonName: "Bench Leaf", notValidBefore: from, notValidAfter: until)
        builder.serialNumber = 3
        builder.customExtensions = [(AppStoreSignedDataVerifier.leafMarkerOID, Data([0x05, 0x00]), false)]
        let leaf = try builder.build(subjectKey: leafKey, issuer: intermediate, issuerKey: intermediateKey)
        x5c = [leaf, intermediate, root].map { $0.derEncoded.base64EncodedString() }
    }

    /// A sandbox consumable purchase of com.example.game with this transaction id.
    func transaction(id: String) throws -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": id, "bundleId": "com.example.game", "productId": "gems.100",
            "purchaseDate": now - 60_000, "originalPurchaseDate": now - 60_000, "quantity": 1, "type": "Consumable",
            "inAppOwnershipType": "PURCHASED", "signedDate": now, "environment": "Sandbox", "storefront": "USA", "price": 990, "currency": "USD",
        ]
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": x5c], options: [.sortedKeys])
        let body = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let input = Base64.urlEncode(header) + "." + Base64.urlEncode(body)
        return input + "." + Base64.urlEncode(try leafKey.signES256(Data(input.utf8)))
    }
}
