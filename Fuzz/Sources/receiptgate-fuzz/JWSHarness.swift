import AppStoreTestSupport
import Foundation
import OpenSSLCrypto

@testable import AppStore

/// The StoreKit 2 JWS verifier on arbitrary text: every entry point, against Apple's real root
/// (so nothing fuzzed can verify unless Apple signed it) and with a small cache, so cache
/// eviction runs too. The input is also taken as a payload on its own: the hand-written
/// transaction decoding (JSONReader) must agree with what JSONSerialization's parse of it says,
/// wherever that settles it (`StoreKitPayloadReference`).
enum JWSHarness {
    static let verifier: AppStoreSignedDataVerifier = {
        guard let root = try? AppleRootCertificates.appleRoot() else {
            fatalError("the embedded Apple root does not parse")
        }
        return AppStoreSignedDataVerifier(trustRoots: [root], cacheCapacity: 4)
    }()
    static let expectations = AppStoreExpectations(
        bundleIDs: ["com.example.game"], environments: [.sandbox, .production])

    static func run(_ data: Data) {
        let token = String(decoding: data, as: UTF8.self)
        _ = try? verifier.verifyTransaction(token, expecting: expectations)
        _ = try? verifier.verifyRenewalInfo(token, expecting: expectations)
        _ = try? verifier.verifyNotification(token, expecting: expectations)
        _ = try? verifier.verifyAppTransaction(token, expecting: expectations)
        _ = try? verifier.chainCertificates(of: token)
        _ = try? verifier.verifiedPayload(token)
        // The parts on their own: the splitter and header decoding under the verifier.
        if let parts = try? CompactJWS.Parts(splitting: token) { _ = try? CompactJWS(parts: parts).header }
        comparePayloadDecoding(data)
    }

    static func comparePayloadDecoding(_ payload: Data) {
        let decoded = try? JWSTransactionDecodedPayload(jsonPayload: payload)
        if case .decided(let reference) = StoreKitPayloadReference.transaction(payload), decoded != reference {
            fatalError(
                "JSONReader decoded \(String(describing: decoded)), JSONSerialization \(String(describing: reference))")
        }
        let dates = (try? AppStoreSignedDataVerifier.SigningDates(jsonPayload: payload)).map {
            [$0.signedDate, $0.receiptCreationDate]
        }
        if case .decided(let reference) = StoreKitPayloadReference.signingDates(payload), dates != reference {
            fatalError("JSONReader and JSONSerialization disagree on the signing dates")
        }
    }
}
