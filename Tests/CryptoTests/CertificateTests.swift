import Crypto
import Foundation
import Testing

/// A throwaway three-level PKI, minted per test: nothing ages in the repository.
struct TestPKI {
    static let intermediateMarker = "1.2.840.113635.100.6.2.1"
    static let leafMarker = "1.2.840.113635.100.6.11.1"

    let rootKey: PrivateKey, root: Certificate
    let intermediateKey: PrivateKey, intermediate: Certificate
    let leafKey: PrivateKey, leaf: Certificate
    let validFrom: Date, validUntil: Date

    init(validFrom: Date = Date(timeIntervalSinceNow: -86_400), validUntil: Date = Date(timeIntervalSinceNow: 86_400 * 365)) throws {
        self.validFrom = validFrom
        self.validUntil = validUntil
        rootKey = try .generateP256()
        var rootBuilder = CertificateBuilder(subjectCommonName: "Test Root", notValidBefore: validFrom, notValidAfter: validUntil)
        rootBuilder.isCertificateAuthority = true
        root = try rootBuilder.build(subjectKey: rootKey, issuer: nil, issuerKey: rootKey)

        intermediateKey = try .generateP256()
        var intermediateBuilder = CertificateBuilder(subjectCommonName: "Test Intermediate", notValidBefore: validFrom, notValidAfter: validUntil)
        intermediateBuilder.isCertificateAuthority = true
        intermediateBuilder.serialNumber = 2
        intermediateBuilder.customExtensions = [(Self.intermediateMarker, Data([0x05, 0x00]), false)]
        intermediate = try intermediateBuilder.build(subjectKey: intermediateKey, issuer: root, issuerKey: rootKey)

        leafKey = try .generateP256()
        var leafBuilder = CertificateBuilder(subjectCommonName: "Test Leaf", notValidBefore: validFrom, notValidAfter: validUntil)
        leafBuilder.serialNumber = 3
        leafBuilder.customExtensions = [(Self.leafMarker, Data([0x05, 0x00]), false)]
        leaf = try leafBuilder.build(subjectKey: leafKey, issuer: intermediate, issuerKey: intermediateKey)
    }
}

@Suite struct CertificateChains {
    @Test func chainVerifiesAgainstItsRootInsideTheValidityWindow() throws {
        let pki = try TestPKI()
        let verifier = CertificateChainVerifier(trustRoots: [pki.root])
        try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: Date())
    }

    @Test func chainIsRejectedOutsideTheValidityWindowAtTheCallersTime() throws {
        let pki = try TestPKI(validFrom: Date(timeIntervalSince1970: 1_600_000_000), validUntil: Date(timeIntervalSince1970: 1_700_000_000))
        let verifier = CertificateChainVerifier(trustRoots: [pki.root])
        try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: Date(timeIntervalSince1970: 1_650_000_000))
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: Date(timeIntervalSince1970: 1_700_000_100))
        }
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: Date(timeIntervalSince1970: 1_599_999_000))
        }
    }

    @Test func anotherRootOrAMissingIntermediateIsRejected() throws {
        let pki = try TestPKI(), other = try TestPKI()
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try CertificateChainVerifier(trustRoots: [other.root]).verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: Date())
        }
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try CertificateChainVerifier(trustRoots: [pki.root]).verify(leaf: pki.leaf, intermediates: [], at: Date())
        }
        // A look-alike intermediate (same name, other key) does not link the chain.
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try CertificateChainVerifier(trustRoots: [pki.root]).verify(leaf: pki.leaf, intermediates: [other.intermediate], at: Date())
        }
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try CertificateChainVerifier(trustRoots: []).verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: Date())
        }
    }

    @Test func extensionsAreReadableByOID() throws {
        let pki = try TestPKI()
        #expect(pki.intermediate.extensionValue(oid: TestPKI.intermediateMarker) == Data([0x05, 0x00]))
        #expect(!pki.intermediate.hasExtension(oid: TestPKI.leafMarker))
        #expect(pki.leaf.hasExtension(oid: TestPKI.leafMarker))
        #expect(pki.leaf.extensionValue(oid: "not an oid") == nil)
        #expect(pki.leaf.subject.contains("Test Leaf"))
        #expect(pki.leaf.issuer.contains("Test Intermediate"))
        let notAfter = try #require(pki.leaf.notValidAfter)
        #expect(abs(notAfter.timeIntervalSince(pki.validUntil)) < 1)
    }

    @Test func derAndPEMRoundTripAndTheLeafKeyVerifies() throws {
        let pki = try TestPKI()
        let reparsed = try Certificate(derEncoded: pki.leaf.derEncoded)
        #expect(reparsed == pki.leaf)
        let pem = [pki.leaf, pki.intermediate].map {
            "-----BEGIN CERTIFICATE-----\n\($0.derEncoded.base64EncodedString(options: .lineLength64Characters))\n-----END CERTIFICATE-----\n"
        }.joined()
        #expect(try Certificate.parsePEM(pem) == [pki.leaf, pki.intermediate])
        #expect(try Certificate.parseFile(contents: Data(pem.utf8)).count == 2)
        #expect(try Certificate.parseFile(contents: pki.root.derEncoded) == [pki.root])
        #expect(throws: CryptoError(.invalidCertificate, "")) { try Certificate(derEncoded: Data("garbage".utf8)) }
        #expect(throws: CryptoError(.invalidCertificate, "")) { try Certificate(derEncoded: pki.leaf.derEncoded + [0]) }

        let message = Data("signed by the leaf".utf8)
        #expect(try pki.leaf.publicKey.isValidES256(signature: try pki.leafKey.signES256(message), for: message))
    }

    /// `openssl verify`, an implementation we did not write, agrees with our verdicts.
    @Test func opensslVerifyAgrees() throws {
        let pki = try TestPKI(), other = try TestPKI()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rg-x509-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func write(_ certificate: Certificate, _ name: String) throws {
            try certificate.derEncoded.write(to: directory.appendingPathComponent(name))
        }
        try write(pki.root, "root.der"); try write(pki.intermediate, "int.der"); try write(pki.leaf, "leaf.der")
        try write(other.root, "other.der")
        for name in ["root", "int", "leaf", "other"] {
            _ = try runOpenSSL(["x509", "-inform", "DER", "-in", "\(name).der", "-out", "\(name).pem"], in: directory)
        }
        #expect(try runOpenSSL(["verify", "-CAfile", "root.pem", "-untrusted", "int.pem", "leaf.pem"], in: directory) == 0)
        #expect(try runOpenSSL(["verify", "-CAfile", "other.pem", "-untrusted", "int.pem", "leaf.pem"], in: directory) != 0)
    }
}
