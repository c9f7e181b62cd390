import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

@testable import AppStore

/// A StoreKit 2 JWS whose leaf certificate, issued by the genuine intermediate, carries P-256's
/// point at infinity: its signature needs no private key at all, so it must be refused.
@Suite struct PointAtInfinityLeaf {
    @Test func aTransactionSignedForThePointAtInfinityIsRefused() throws {
        let pki = try AppleTestPKI()
        let leaf = try CertificateSurgery.replacingKey(
            of: pki.leaf, with: CertificateSurgery.p256PointAtInfinity, issuerKey: pki.intermediateKey)
        let x5c = [leaf, pki.intermediate, pki.root].map { $0.derEncoded.base64EncodedString() }
        let header = Base64.urlEncode(
            try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": x5c], options: [.sortedKeys]))
        // A few transaction ids until the digest is below the group order (almost always the first).
        var token: String?
        for attempt in 0..<8 where token == nil {
            let payload = AppleTestPKI.transaction(["transactionId": "20000009\(attempt)0000000"])
            let input =
                header + "."
                + Base64.urlEncode(try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
            token = try CertificateSurgery.signatureForPointAtInfinity(over: Data(input.utf8)).map {
                input + "." + Base64.urlEncode($0)
            }
        }
        let forged = try #require(token)
        let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root])
        expectRejection(.invalidCertificate) {
            _ = try verifier.verifyTransaction(
                forged, expecting: AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox]))
        }
    }
}
