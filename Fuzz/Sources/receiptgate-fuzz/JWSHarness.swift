@testable import AppStore
import Crypto
import Foundation
import JSON

/// The StoreKit 2 JWS verifier on arbitrary text: every entry point, against Apple's real root
/// (so nothing fuzzed can verify unless Apple signed it) and with a small cache, so cache
/// eviction runs too. The input is also taken as a payload on its own: the hand-written
/// transaction decoding (JSONReader) must agree with JSONDecoder on it.
enum JWSHarness {
    static let verifier: AppStoreSignedDataVerifier = {
        guard let root = try? AppleRootCertificates.appleRoot() else { fatalError("the embedded Apple root does not parse") }
        return AppStoreSignedDataVerifier(trustRoots: [root], cacheCapacity: 4)
    }()
    static let expectations = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox, .production])

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
        let reference = try? JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: payload)
        let dates = try? JSONDecoder().decode(AppStoreSignedDataVerifier.SigningDates.self, from: payload)
        do throws(JSONReaderError) {
            let decoded = try JWSTransactionDecodedPayload(jsonPayload: payload)
            guard decoded == reference else { fatalError("JSONReader decoded \(decoded), JSONDecoder \(String(describing: reference))") }
        } catch where error.code == .unsupportedEncoding {
            return  // UTF-16 or UTF-32: the verifier hands those to JSONDecoder
        } catch {
            guard reference == nil else { fatalError("JSONReader refused (\(error)) what JSONDecoder decoded") }
        }
        let readerDates = try? AppStoreSignedDataVerifier.SigningDates(jsonPayload: payload)
        guard readerDates?.signedDate == dates?.signedDate, readerDates?.receiptCreationDate == dates?.receiptCreationDate,
              (readerDates == nil) == (dates == nil) else {
            fatalError("JSONReader and JSONDecoder disagree on the signing dates")
        }
    }
}
