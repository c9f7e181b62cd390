import Foundation
import OpenSSLCrypto
import Testing

/// A throwaway three-level PKI, minted per test: nothing ages in the repository.
struct TestPKI {
    static let intermediateMarker = "1.2.840.113635.100.6.2.1"
    static let leafMarker = "1.2.840.113635.100.6.11.1"

    let rootKey: PrivateKey, root: Certificate
    let intermediateKey: PrivateKey, intermediate: Certificate
    let leafKey: PrivateKey, leaf: Certificate
    let validFrom: Date, validUntil: Date

    /// Every certificate is valid from `validFrom` to `validUntil`, unless `intermediateWindow` or
    /// `leafWindow` gives that one a window of its own.
    init(
        validFrom: Date = Date(timeIntervalSinceNow: -86_400),
        validUntil: Date = Date(timeIntervalSinceNow: 86_400 * 365),
        intermediateWindow: (from: Date, until: Date)? = nil, leafWindow: (from: Date, until: Date)? = nil
    ) throws {
        self.validFrom = validFrom
        self.validUntil = validUntil
        let intermediateWindow = intermediateWindow ?? (validFrom, validUntil)
        let leafWindow = leafWindow ?? (validFrom, validUntil)
        rootKey = try .generateP256()
        var rootBuilder = CertificateBuilder(
            subjectCommonName: "Test Root", notValidBefore: validFrom, notValidAfter: validUntil)
        rootBuilder.isCertificateAuthority = true
        root = try rootBuilder.build(subjectKey: rootKey, issuer: nil, issuerKey: rootKey)

        intermediateKey = try .generateP256()
        var intermediateBuilder = CertificateBuilder(
            subjectCommonName: "Test Intermediate", notValidBefore: intermediateWindow.from,
            notValidAfter: intermediateWindow.until)
        intermediateBuilder.isCertificateAuthority = true
        intermediateBuilder.serialNumber = 2
        intermediateBuilder.customExtensions = [(Self.intermediateMarker, Data([0x05, 0x00]), false)]
        intermediate = try intermediateBuilder.build(subjectKey: intermediateKey, issuer: root, issuerKey: rootKey)

        leafKey = try .generateP256()
        var leafBuilder = CertificateBuilder(
            subjectCommonName: "Test Leaf", notValidBefore: leafWindow.from, notValidAfter: leafWindow.until)
        leafBuilder.serialNumber = 3
        leafBuilder.customExtensions = [(Self.leafMarker, Data([0x05, 0x00]), false)]
        leaf = try leafBuilder.build(subjectKey: leafKey, issuer: intermediate, issuerKey: intermediateKey)
    }
}

@Suite struct CertificateChains {
    @Test func chainVerifiesAgainstItsRootInsideTheValidityWindow() throws {
        let pki = try TestPKI()
        let verifier = CertificateChainVerifier(trustRoots: [pki.root])
        let window = try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: Date())
        #expect(window.length == 3)
        #expect(abs(window.notBefore.timeIntervalSince(pki.validFrom)) < 1)
        #expect(abs(window.notAfter.timeIntervalSince(pki.validUntil)) < 1)
    }

    /// Two layouts, so that each of the four bounds (leaf and intermediate, start and end) is the
    /// one that decides at some edge: the chain is valid only where all three certificates are.
    static let windowLayouts:
        [(name: String, intermediate: (from: Date, until: Date), leaf: (from: Date, until: Date))] = [
            (
                "intermediate starts last, leaf ends first",
                (Date(timeIntervalSince1970: 1_600_000_000), Date(timeIntervalSince1970: 1_700_000_000)),
                (Date(timeIntervalSince1970: 1_550_000_000), Date(timeIntervalSince1970: 1_650_000_000))
            ),
            (
                "leaf starts last, intermediate ends first",
                (Date(timeIntervalSince1970: 1_550_000_000), Date(timeIntervalSince1970: 1_650_000_000)),
                (Date(timeIntervalSince1970: 1_600_000_000), Date(timeIntervalSince1970: 1_700_000_000))
            ),
        ]

    @Test(arguments: 0..<2)
    func chainIsRejectedJustOutsideTheLeafAndIntermediateWindows(layout index: Int) throws {
        let layout = Self.windowLayouts[index]
        let pki = try TestPKI(
            validFrom: Date(timeIntervalSince1970: 1_500_000_000),
            validUntil: Date(timeIntervalSince1970: 1_800_000_000),
            intermediateWindow: layout.intermediate, leafWindow: layout.leaf)
        let verifier = CertificateChainVerifier(trustRoots: [pki.root])
        let opens = max(layout.intermediate.from, layout.leaf.from)
        let closes = min(layout.intermediate.until, layout.leaf.until)
        func verify(at time: Date) throws {
            try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: time)
        }

        // Inside, at both edges and in the middle: accepted, and the window reported is the overlap.
        let window = try verifier.verify(leaf: pki.leaf, intermediates: [pki.intermediate], at: opens + 1)
        #expect(window.notBefore == opens, "\(layout.name)")
        #expect(window.notAfter == closes, "\(layout.name)")
        try verify(at: Date(timeIntervalSince1970: (opens.timeIntervalSince1970 + closes.timeIntervalSince1970) / 2))
        try verify(at: closes - 1)
        // One second outside either edge: refused. Each edge belongs to a different certificate.
        #expect(throws: CryptoError(.chainInvalid, ""), "\(layout.name): 1 s before notValidBefore") {
            try verify(at: opens - 1)
        }
        #expect(throws: CryptoError(.chainInvalid, ""), "\(layout.name): 1 s after notValidAfter") {
            try verify(at: closes + 1)
        }
        // Inside the other certificate's window but outside this edge's owner: still refused.
        #expect(throws: CryptoError(.chainInvalid, "")) { try verify(at: opens - 86_400) }
        #expect(throws: CryptoError(.chainInvalid, "")) { try verify(at: closes + 86_400) }
    }

    @Test func anotherRootOrAMissingIntermediateIsRejected() throws {
        let pki = try TestPKI(), other = try TestPKI()
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try CertificateChainVerifier(trustRoots: [other.root]).verify(
                leaf: pki.leaf, intermediates: [pki.intermediate], at: Date())
        }
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try CertificateChainVerifier(trustRoots: [pki.root]).verify(leaf: pki.leaf, intermediates: [], at: Date())
        }
        // A look-alike intermediate (same name, other key) does not link the chain.
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try CertificateChainVerifier(trustRoots: [pki.root]).verify(
                leaf: pki.leaf, intermediates: [other.intermediate], at: Date())
        }
        #expect(throws: CryptoError(.chainInvalid, "")) {
            try CertificateChainVerifier(trustRoots: []).verify(
                leaf: pki.leaf, intermediates: [pki.intermediate], at: Date())
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
        #expect(
            try runOpenSSL(["verify", "-CAfile", "root.pem", "-untrusted", "int.pem", "leaf.pem"], in: directory) == 0)
        #expect(
            try runOpenSSL(["verify", "-CAfile", "other.pem", "-untrusted", "int.pem", "leaf.pem"], in: directory) != 0)
    }
}
