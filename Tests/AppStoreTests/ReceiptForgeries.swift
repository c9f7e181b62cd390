import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

@testable import AppStore

/// The real sandbox receipt and the ways an attacker would imitate one.
enum ReceiptForgeries {
    /// Apple's own receipt (bundle com.starlink.crushlive, created 2025-10-16T06:51:26Z; its leaf
    /// expired 2026-08-23).
    static func realReceipt() throws -> String {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/real-sandbox-receipt", withExtension: "b64"))
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static let realCreationDate = Date(timeIntervalSince1970: 1_760_597_486)

    static func realContainer() throws -> PKCS7Container {
        try PKCS7Container(der: try #require(Base64.decodeLenient(try realReceipt())))
    }

    /// A chain named exactly like Apple's (Apple Root CA → WWDR G5 → receipt signing, RSA, with
    /// Apple's marker extensions), minted by us: only the root's key differs from the real thing.
    struct LookAlikePKI {
        let root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: PrivateKey

        init(
            leafValidFrom: Date = Date(timeIntervalSince1970: 1_700_000_000),
            leafValidUntil: Date = Date(timeIntervalSinceNow: 86_400 * 365)
        ) throws {
            let rootKey = try TestKeys.rsa(.lookAlikeRoot), intermediateKey = try TestKeys.rsa(.lookAlikeIntermediate)
            leafKey = try TestKeys.rsa(.lookAlikeLeaf)
            let start = Date(timeIntervalSince1970: 1_145_000_000), end = Date(timeIntervalSince1970: 2_054_000_000)
            var rootBuilder = CertificateBuilder(
                subjectCommonName: "Apple Root CA", notValidBefore: start, notValidAfter: end)
            rootBuilder.subjectName = [
                ("C", "US"), ("O", "Apple Inc."), ("OU", "Apple Certification Authority"), ("CN", "Apple Root CA"),
            ]
            rootBuilder.isCertificateAuthority = true
            root = try rootBuilder.build(subjectKey: rootKey, issuer: nil, issuerKey: rootKey)

            let wwdr = "Apple Worldwide Developer Relations Certification Authority"
            var intermediateBuilder = CertificateBuilder(
                subjectCommonName: wwdr, notValidBefore: start, notValidAfter: end)
            intermediateBuilder.subjectName = [("CN", wwdr), ("OU", "G5"), ("O", "Apple Inc."), ("C", "US")]
            intermediateBuilder.isCertificateAuthority = true
            intermediateBuilder.serialNumber = 2
            intermediateBuilder.customExtensions = [(AppleTestPKI.intermediateOID, Data([0x05, 0x00]), false)]
            intermediate = try intermediateBuilder.build(subjectKey: intermediateKey, issuer: root, issuerKey: rootKey)

            let signing = "Mac App Store and iTunes Store Receipt Signing"
            var leafBuilder = CertificateBuilder(
                subjectCommonName: signing, notValidBefore: leafValidFrom, notValidAfter: leafValidUntil)
            leafBuilder.subjectName = [
                ("CN", signing), ("OU", "Apple Worldwide Developer Relations"), ("O", "Apple Inc."), ("C", "US"),
            ]
            leafBuilder.serialNumber = 3
            leafBuilder.customExtensions = [
                (AppReceiptAuthenticator.receiptSigningMarkerOID, Data([0x05, 0x00]), false)
            ]
            leaf = try leafBuilder.build(subjectKey: leafKey, issuer: intermediate, issuerKey: intermediateKey)
        }

        /// `payload` signed by the look-alike leaf, the container carrying its intermediate and root.
        func sign(_ payload: Data) throws -> String {
            try TestReceipts.sign(payload, streamed: false, leaf: leaf, key: leafKey, carrying: [intermediate, root])
        }
    }

    /// The real receipt with one byte of its bundle id changed (same length, still well formed).
    static func tamperedReceipt() throws -> String {
        var der = try #require(Base64.decodeLenient(try realReceipt()))
        let bundle = Data("com.starlink.crushlive".utf8)
        let range = try #require(der.range(of: bundle))
        der[range.upperBound - 1] = UInt8(ascii: "X")
        return der.base64EncodedString()
    }

    /// A SignedData container with Apple's content and Apple's certificates but no signer at all.
    static func unsignedReceipt() throws -> String {
        let container = try realContainer()
        let signedData = Data([0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x02])
        let data = Data([0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07, 0x01])
        let contentInfo = DER.tlv(0x30, data + DER.tlv(0xa0, DER.tlv(0x04, container.content)))
        let certificates = DER.tlv(0xa0, container.certificates.map(\.derEncoded).reduce(Data(), +))
        let body = DER.integer(1) + DER.set([]) + contentInfo + certificates + DER.set([])
        return DER.tlv(0x30, signedData + DER.tlv(0xa0, DER.tlv(0x30, body))).base64EncodedString()
    }

    /// `openssl cms -verify`'s verdict on a receipt, trusting only `roots`, at `time`: an
    /// independent reference for ours.
    static func opensslAccepts(_ base64: String, roots: [Certificate], at time: Date) throws -> Bool {
        let directory = TestDatabase.temporaryDirectory("cms-verify")
        let input = directory.appendingPathComponent("receipt.der"),
            rootFile = directory.appendingPathComponent("roots.pem")
        try #require(Base64.decodeLenient(base64)).write(to: input)
        try roots.map {
            "-----BEGIN CERTIFICATE-----\n" + $0.derEncoded.base64EncodedString(options: .lineLength64Characters)
                + "\n-----END CERTIFICATE-----\n"
        }
        .joined().write(to: rootFile, atomically: true, encoding: .utf8)
        return try ChildProcess.runBlocking(
            "/usr/bin/openssl",
            [
                "cms", "-verify", "-inform", "DER", "-in", input.path, "-CAfile", rootFile.path,
                "-no-CApath", "-no-CAstore", "-binary", "-attime", String(Int64(time.timeIntervalSince1970)),
                "-out", "/dev/null",
            ]
        ).status == 0
    }
}
