import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

@testable import AppStore

/// StoreKit 1 receipts are authenticated locally, to the configured receipt roots, at their
/// creation date, before anything else happens to them.
@Suite struct ReceiptSignature {
    static let appleRootFingerprint = "B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024"

    @Test func theEmbeddedReceiptRootIsApplesRootCA() throws {
        let root = try AppleRootCertificates.appleReceiptRoot()
        #expect(Hex.encode(try root.sha256Fingerprint).uppercased() == Self.appleRootFingerprint)
        #expect(root.subject == "/C=US/O=Apple Inc./OU=Apple Certification Authority/CN=Apple Root CA")
        #expect(AppleRootCertificates.defaultReceiptRoots == [root])
        #expect(try AppleRootCertificates.configuredReceiptRoots(environment: [:]) == [root])
        // The fixture carries the same root: what we embedded is what Apple signs receipts under.
        #expect(try ReceiptForgeries.realContainer().certificates.contains(root))
    }

    @Test func theRealSandboxReceiptVerifiesToApplesRootAtItsCreationDate() throws {
        let authenticator = AppReceiptAuthenticator(trustRoots: AppleRootCertificates.defaultReceiptRoots)
        let receipt = try authenticator.authenticate(base64: try ReceiptForgeries.realReceipt())
        #expect(receipt.bundleID == "com.starlink.crushlive")
        #expect(receipt.creationDate == ReceiptForgeries.realCreationDate)
        #expect(receipt.inApp.first?.transactionID == "2000001035354428")

        // Its leaf expired on 2026-08-23: checked at today's date the same container is refused,
        // which is why the creation date is the one that counts.
        let der = try #require(Base64.decodeLenient(try ReceiptForgeries.realReceipt()))
        let verifier = PKCS7SignatureVerifier(trustRoots: AppleRootCertificates.defaultReceiptRoots)
        let expired = #expect(throws: CryptoError.self) {
            try verifier.verify(der: der, at: Date(timeIntervalSince1970: 1_800_000_000))
        }
        #expect(expired?.code == .chainInvalid)
        #expect(expired?.message.contains("certificate has expired") == true, "\(String(describing: expired))")
        let verified = try verifier.verify(der: der, at: ReceiptForgeries.realCreationDate)
        #expect(
            verified.signers.map(\.subject) == [
                "/CN=Mac App Store and iTunes Store Receipt Signing/OU=Apple Worldwide Developer Relations/O=Apple Inc./C=US"
            ])
        #expect(verified.signers.first?.hasExtension(oid: AppReceiptAuthenticator.receiptSigningMarkerOID) == true)
        #expect(verified.content == (try ReceiptForgeries.realContainer().content))
    }

    @Test func anotherRootIsNotTrusted() throws {
        // Apple Root CA - G3 signs StoreKit 2, not receipts; the root inside the container counts for nothing.
        let authenticator = AppReceiptAuthenticator(trustRoots: [try AppleRootCertificates.appleRoot()])
        expectRejection(.chainNotTrusted) {
            _ = try authenticator.authenticate(base64: try ReceiptForgeries.realReceipt())
        }
    }

    @Test func aLookAlikeChainIsRefused() throws {
        let lookAlike = try ReceiptForgeries.LookAlikePKI()
        let forged = try lookAlike.sign(try ReceiptForgeries.realContainer().content)
        // Same content, same names, same marker extensions: only the root's key differs.
        #expect(try AppReceipt(base64: forged) == (try AppReceipt(base64: try ReceiptForgeries.realReceipt())))
        let authenticator = AppReceiptAuthenticator(trustRoots: AppleRootCertificates.defaultReceiptRoots)
        expectRejection(.chainNotTrusted) { _ = try authenticator.authenticate(base64: forged) }
        // Trusting the look-alike root instead shows the container itself is well formed.
        let receipt = try AppReceiptAuthenticator(trustRoots: [lookAlike.root]).authenticate(base64: forged)
        #expect(receipt.bundleID == "com.starlink.crushlive")
    }

    @Test func tamperedUnsignedAndGarbledContainersAreRefused() throws {
        let authenticator = AppReceiptAuthenticator(trustRoots: AppleRootCertificates.defaultReceiptRoots)
        // The parser is happy with each of these; only the signature check refuses them.
        #expect(try AppReceipt(base64: try ReceiptForgeries.tamperedReceipt()).bundleID == "com.starlink.crushlivX")
        expectRejection(.receiptSignatureInvalid) {
            _ = try authenticator.authenticate(base64: try ReceiptForgeries.tamperedReceipt())
        }
        #expect(try AppReceipt(base64: try ReceiptForgeries.unsignedReceipt()).bundleID == "com.starlink.crushlive")
        expectRejection(.receiptSignatureInvalid) {
            _ = try authenticator.authenticate(base64: try ReceiptForgeries.unsignedReceipt())
        }
        for garbage in ["", "not a receipt", Data((0..<600).map { UInt8($0 % 256) }).base64EncodedString()] {
            expectRejection(.receiptMalformed) { _ = try authenticator.authenticate(base64: garbage) }
        }
        // Truncated: no longer a container.
        let der = try #require(Base64.decodeLenient(try ReceiptForgeries.realReceipt()))
        expectRejection(.receiptMalformed) {
            _ = try authenticator.authenticate(base64: der.prefix(der.count - 40).base64EncodedString())
        }
    }

    @Test func theSignerMustBeAReceiptSigningCertificate() throws {
        var options = AppleTestPKI.Options()
        options.leafMarker = false
        let pki = try AppleTestPKI(options)
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false, pki: pki)
        expectRejection(.missingAppleExtension) {
            _ = try AppReceiptAuthenticator(trustRoots: [pki.root]).authenticate(base64: receipt)
        }
    }

    /// Apple's leaves expire every two years; a receipt signed while its leaf was valid stays genuine.
    @Test(arguments: [false, true])
    func validityIsCheckedAtTheCreationDate(streamed: Bool) throws {
        let day: TimeInterval = 86_400
        var expiredToday = AppleTestPKI.Options()
        expiredToday.validFrom = Date(timeIntervalSinceNow: -900 * day)
        expiredToday.leafValidFrom = Date(timeIntervalSinceNow: -800 * day)
        expiredToday.leafValidUntil = Date(timeIntervalSinceNow: -10 * day)
        let expired = try AppleTestPKI(expiredToday)
        let created = Date(timeIntervalSinceNow: -400 * day).rounded
        let genuine = try TestReceipts.sign(TestReceipts.payload(created: created), streamed: streamed, pki: expired)
        let receipt = try AppReceiptAuthenticator(trustRoots: [expired.root]).authenticate(base64: genuine)
        #expect(receipt.creationDate == created)

        // Claims to be made before its signing certificate existed.
        var lateLeaf = AppleTestPKI.Options()
        lateLeaf.validFrom = Date(timeIntervalSinceNow: -900 * day)
        lateLeaf.leafValidFrom = Date(timeIntervalSinceNow: -10 * day)
        let young = try AppleTestPKI(lateLeaf)
        let backdated = try TestReceipts.sign(TestReceipts.payload(created: created), streamed: streamed, pki: young)
        expectRejection(.chainNotTrusted) {
            _ = try AppReceiptAuthenticator(trustRoots: [young.root]).authenticate(base64: backdated)
        }
        // ...while the same certificate signing a receipt created now is fine.
        let fresh = try TestReceipts.sign(TestReceipts.payload(), streamed: streamed, pki: young)
        #expect(
            try AppReceiptAuthenticator(trustRoots: [young.root]).authenticate(base64: fresh).bundleID
                == "com.example.game")
    }

    /// `openssl cms -verify` reaches the same verdicts, at the same times, with the same roots.
    @Test func opensslAgreesOnEveryVerdict() throws {
        let apple = AppleRootCertificates.defaultReceiptRoots
        let lookAlike = try ReceiptForgeries.LookAlikePKI()
        let cases: [(name: String, receipt: String, roots: [Certificate], at: Date, accepted: Bool)] = [
            ("real at creation", try ReceiptForgeries.realReceipt(), apple, ReceiptForgeries.realCreationDate, true),
            (
                "real after its leaf expired", try ReceiptForgeries.realReceipt(), apple,
                Date(timeIntervalSince1970: 1_800_000_000), false
            ),
            (
                "look-alike", try lookAlike.sign(try ReceiptForgeries.realContainer().content), apple,
                ReceiptForgeries.realCreationDate, false
            ),
            ("tampered", try ReceiptForgeries.tamperedReceipt(), apple, ReceiptForgeries.realCreationDate, false),
            ("unsigned", try ReceiptForgeries.unsignedReceipt(), apple, ReceiptForgeries.realCreationDate, false),
        ]
        for item in cases {
            let der = try #require(Base64.decodeLenient(item.receipt))
            let ours = (try? PKCS7SignatureVerifier(trustRoots: item.roots).verify(der: der, at: item.at)) != nil
            #expect(ours == item.accepted, "\(item.name): ours \(ours)")
            #expect(
                try ReceiptForgeries.opensslAccepts(item.receipt, roots: item.roots, at: item.at) == item.accepted,
                "\(item.name): openssl")
        }
    }
}

extension Date {
    /// Whole seconds, as receipts state dates.
    var rounded: Date { Date(timeIntervalSince1970: timeIntervalSince1970.rounded(.down)) }
}
