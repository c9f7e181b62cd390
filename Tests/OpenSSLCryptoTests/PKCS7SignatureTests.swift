import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

/// PKCS7SignatureVerifier against containers `openssl cms -sign` makes with a throwaway PKI.
@Suite struct PKCS7Signatures {
    /// `content` signed by the PKI's leaf; the container carries the intermediate and the root.
    static func sign(
        _ content: Data, with pki: TestPKI, carrying: [Certificate]? = nil, streamed: Bool = false
    ) throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pkcs7-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func pem(_ certificate: Certificate) -> String {
            "-----BEGIN CERTIFICATE-----\n"
                + certificate.derEncoded.base64EncodedString(options: .lineLength64Characters)
                + "\n-----END CERTIFICATE-----\n"
        }
        let paths = ["key", "leaf", "chain", "in", "out"].map { directory.appendingPathComponent($0).path }
        try pki.leafKey.pemRepresentation().write(toFile: paths[0], atomically: true, encoding: .utf8)
        try pem(pki.leaf).write(toFile: paths[1], atomically: true, encoding: .utf8)
        try (carrying ?? [pki.intermediate, pki.root]).map(pem).joined().write(
            toFile: paths[2], atomically: true, encoding: .utf8)
        try content.write(to: URL(fileURLWithPath: paths[3]))
        let signed = try ChildProcess.runBlocking(
            "/usr/bin/openssl",
            [
                "cms", "-sign", "-binary", "-nodetach", "-outform", "DER", "-signer", paths[1],
                "-inkey", paths[0], "-certfile", paths[2], "-in", paths[3], "-out", paths[4],
            ]
                + (streamed ? ["-stream"] : []))
        try #require(signed.status == 0)
        return try Data(contentsOf: URL(fileURLWithPath: paths[4]))
    }

    @Test(arguments: [false, true])
    func aGoodSignatureYieldsTheContentAndTheSigner(streamed: Bool) throws {
        let pki = try TestPKI()
        let content = Data((0..<3000).map { UInt8($0 % 251) })
        let verified = try PKCS7SignatureVerifier(trustRoots: [pki.root]).verify(
            der: try Self.sign(content, with: pki, streamed: streamed), at: Date())
        #expect(verified.content == content)
        #expect(verified.signers == [pki.leaf])
    }

    @Test func aChangedByteBreaksTheSignature() throws {
        let pki = try TestPKI()
        let content = Data("the receipt content, exactly".utf8)
        var der = try Self.sign(content, with: pki)
        let range = try #require(der.range(of: content))
        der[range.lowerBound] ^= 0x01
        #expect(throws: CryptoError(.invalidSignature, "")) {
            try PKCS7SignatureVerifier(trustRoots: [pki.root]).verify(der: der, at: Date())
        }
    }

    @Test func onlyTheCallersRootsAndTimeCount() throws {
        let pki = try TestPKI(
            validFrom: Date(timeIntervalSince1970: 1_600_000_000),
            validUntil: Date(timeIntervalSince1970: 1_700_000_000))
        let der = try Self.sign(Data("x".utf8), with: pki)
        let inside = Date(timeIntervalSince1970: 1_650_000_000)
        #expect(
            try PKCS7SignatureVerifier(trustRoots: [pki.root]).verify(der: der, at: inside).content == Data("x".utf8))
        // The root the container carries is not trusted for being there.
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try PKCS7SignatureVerifier(trustRoots: [try TestPKI().root]).verify(der: der, at: inside)
        }
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try PKCS7SignatureVerifier(trustRoots: []).verify(der: der, at: inside)
        }
        // Before and after the chain's validity.
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try PKCS7SignatureVerifier(trustRoots: [pki.root]).verify(
                der: der, at: Date(timeIntervalSince1970: 1_599_000_000))
        }
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try PKCS7SignatureVerifier(trustRoots: [pki.root]).verify(
                der: der, at: Date(timeIntervalSince1970: 1_700_000_100))
        }
        // Without the intermediate in the container, the leaf cannot reach the root.
        let bare = try Self.sign(Data("x".utf8), with: pki, carrying: [pki.root])
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try PKCS7SignatureVerifier(trustRoots: [pki.root]).verify(der: bare, at: inside)
        }
    }

    @Test func notAContainerIsAnEncodingError() {
        #expect(throws: CryptoError(.invalidEncoding, "")) {
            try PKCS7SignatureVerifier(trustRoots: []).verify(der: Data("nope".utf8), at: Date())
        }
    }

    @Test func aFullSubjectNameIsWrittenInOrder() throws {
        let key = try PrivateKey.generateP256()
        var builder = CertificateBuilder(
            subjectCommonName: "ignored", notValidBefore: Date(), notValidAfter: Date(timeIntervalSinceNow: 60))
        builder.subjectName = [
            ("C", "US"), ("O", "Apple Inc."), ("OU", "Apple Certification Authority"), ("CN", "Apple Root CA"),
        ]
        let certificate = try builder.build(subjectKey: key, issuer: nil, issuerKey: key)
        #expect(certificate.subject == "/C=US/O=Apple Inc./OU=Apple Certification Authority/CN=Apple Root CA")
        #expect(certificate.issuer == certificate.subject)
    }
}
