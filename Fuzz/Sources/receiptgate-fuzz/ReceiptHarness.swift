import Foundation
import OpenSSLCrypto

@testable import AppStore

/// StoreKit 1 receipts on arbitrary bytes: the PKCS#7 container parser, the signature verifier
/// (to Apple's receipt root), the authenticator, the ASN.1 reader, and the receipt attribute parser
/// fed the bytes directly (a fuzzed container rarely verifies, so its content is reached this way).
enum ReceiptHarness {
    static let roots: [Certificate] = {
        guard let root = try? AppleRootCertificates.appleReceiptRoot() else {
            fatalError("the embedded receipt root does not parse")
        }
        return [root]
    }()
    static let epoch = Date(timeIntervalSince1970: 1_760_000_000)

    static func run(_ data: Data) {
        _ = try? PKCS7Container(der: data)
        _ = try? PKCS7SignatureVerifier(trustRoots: roots).verify(der: data, at: epoch)
        _ = try? ASN1Element.sequence(in: data)
        _ = try? AppReceipt(payload: data)
        let text = Base64.encode(data)
        if let receipt = try? AppReceiptAuthenticator(trustRoots: roots).authenticate(base64: text) {
            // Only Apple's signature gets here; the parse must then be the one the plain parser gives.
            guard (try? AppReceipt(base64: text)) == receipt else {
                fatalError("authenticated and plain parses differ")
            }
        }
        _ = try? AppReceipt(base64: String(decoding: data, as: UTF8.self))
    }
}
