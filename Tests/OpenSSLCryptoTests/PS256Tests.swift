import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

/// One of Wycheproof's RSASSA-PSS verification files (`rsassa_pss_verify_schema_v1.json`), the
/// fields these tests read.
private struct WycheproofPSSFile: Decodable {
    struct Group: Decodable {
        let keySize: Int, sha: String, mgf: String, mgfSha: String, sLen: Int
        let publicKeyDer: String
        let tests: [Vector]
        var isPS256: Bool { sha == "SHA-256" && mgf == "MGF1" && mgfSha == "SHA-256" }
    }

    struct Vector: Decodable {
        let tcId: Int, comment: String, msg: String, sig: String, result: String
    }

    let numberOfTests: Int
    let testGroups: [Group]

    init(_ name: String) throws {
        self = try JSONDecoder().decode(Self.self, from: Data(try fixture(name).utf8))
    }
}

private func hex(_ text: String) throws -> Data { try #require(Hex.decode(text)) }

/// The largest salt RSASSA-PSS with SHA-256 leaves room for: emLen − hLen − 2.
private func maximumSalt(bits: Int) -> Int { (bits + 6) / 8 - 32 - 2 }

@Suite struct PS256Wycheproof {
    /// Every vector of each file is run (the count is checked), and each must come out as below.
    ///
    /// - `valid` verifies: random messages, hashes with long runs of 0s or 1s, salts of all 0s
    ///   or all 1s.
    /// - `invalid` is refused: a changed bit anywhere in EM (hash, padding, the 0x01 separator,
    ///   the top bit), signatures 0, 1, n − 1, n and above n, empty, truncated, with bytes before
    ///   or after, and the PKCS #1 v1.5 signature of the same message.
    /// - except the `s_len changed to N` vectors: genuine PSS signatures whose salt is N bytes
    ///   instead of the file's. Wycheproof calls them invalid for a verifier fixed at the file's
    ///   salt length; ours takes the signer's salt, so they verify. That they are genuine, and not
    ///   a forgery we let through, is checked with OpenSSL's command line fixed at N bytes; and N
    ///   is at most the key's maximum (the largest, 222 for 2048 bits, is among them).
    /// - `acceptable`: none in these files. One appearing after an update fails here until what
    ///   we answer for it is decided and written down.
    @Test(arguments: [
        "wycheproof-rsa_pss_2048_sha256_mgf1_32_test.json", "wycheproof-rsa_pss_2048_sha256_mgf1_0_test.json",
        "wycheproof-rsa_pss_3072_sha256_mgf1_32_test.json", "wycheproof-rsa_pss_4096_sha256_mgf1_32_test.json",
    ])
    func everyVectorAnswersAsDocumented(file: String) throws {
        let vectors = try WycheproofPSSFile(file)
        var run = 0, otherSalt = 0
        for group in vectors.testGroups {
            #expect(group.isPS256, "group of \(group.sha)/\(group.mgfSha) in \(file)")
            guard group.isPS256 else { continue }
            let key = try PublicKey(subjectPublicKeyInfo: try hex(group.publicKeyDer))
            for vector in group.tests {
                run += 1
                let message = try hex(vector.msg), signature = try hex(vector.sig)
                let verified = key.isValidPS256(signature: signature, for: message)
                let label = "tcId \(vector.tcId) (\(vector.comment)) of \(file)"
                switch vector.result {
                case "valid":
                    #expect(verified, "\(label) must verify")
                case "invalid":
                    if let salt = Self.changedSaltLength(vector.comment) {
                        otherSalt += 1
                        #expect(salt != group.sLen && salt <= maximumSalt(bits: group.keySize), "\(label)")
                        #expect(verified, "\(label): a genuine signature with a \(salt)-byte salt must verify")
                        #expect(
                            try Self.opensslVerifies(
                                key: group.publicKeyDer, message: message, signature: signature, saltLength: salt),
                            "\(label) is not a genuine \(salt)-byte-salt signature")
                    } else {
                        #expect(!verified, "\(label) must be refused")
                    }
                default:
                    Issue.record("\(label) is \(vector.result): decide and document what PS256 answers for it")
                }
            }
        }
        #expect(run == vectors.numberOfTests)
        // Each file has them (0, 1, 20, 31/32, 33 and the maximum); none found means the comments changed.
        #expect(otherSalt >= 4)
    }

    /// Signers choose their salt: SHA-256/MGF1-SHA-256 signatures with salts of 0, 20, 28, 32, 48 and
    /// 64 bytes all verify. The same file's signatures with any other hash or MGF1 hash are
    /// refused (genuine under their own parameters, not PS256).
    @Test func signersSaltLengthIsRecoveredAndOtherHashesAreRefused() throws {
        let vectors = try WycheproofPSSFile("wycheproof-rsa_pss_misc_test.json")
        var salts: Set<Int> = [], others = 0
        for group in vectors.testGroups {
            let key = try PublicKey(subjectPublicKeyInfo: try hex(group.publicKeyDer))
            for vector in group.tests {
                #expect(vector.result == "valid")
                let verified = key.isValidPS256(signature: try hex(vector.sig), for: try hex(vector.msg))
                if group.isPS256 {
                    #expect(verified, "tcId \(vector.tcId): a \(group.sLen)-byte salt must verify")
                    salts.insert(group.sLen)
                } else {
                    #expect(!verified, "tcId \(vector.tcId): \(group.sha) with MGF1-\(group.mgfSha) is not PS256")
                    others += 1
                }
            }
        }
        #expect(salts == [0, 20, 28, 32, 48, 64])
        #expect(others > 100)
    }

    private static func changedSaltLength(_ comment: String) -> Int? {
        let prefix = "s_len changed to "
        return comment.hasPrefix(prefix) ? Int(comment.dropFirst(prefix.count)) : nil
    }

    /// `openssl pkeyutl -verify` with PSS fixed at `saltLength` bytes: a verifier we did not write.
    private static func opensslVerifies(key: String, message: Data, signature: Data, saltLength: Int) throws -> Bool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rg-pss-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try hex(key).write(to: directory.appendingPathComponent("key.der"))
        try SHA256.hash(message).write(to: directory.appendingPathComponent("digest"))
        try signature.write(to: directory.appendingPathComponent("sig"))
        let status = try runOpenSSL(
            [
                "pkeyutl", "-verify", "-pubin", "-keyform", "DER", "-inkey", "key.der", "-in", "digest", "-sigfile",
                "sig",
                "-pkeyopt", "digest:sha256", "-pkeyopt", "rsa_padding_mode:pss", "-pkeyopt",
                "rsa_pss_saltlen:\(saltLength)",
                "-pkeyopt", "rsa_mgf1_md:sha256",
            ], in: directory)
        return status == 0
    }
}

@Suite struct PS256 {
    private static let message = Data("ReceiptGate PS256".utf8)

    @Test(arguments: [0, 32, maximumSalt(bits: 2048)])
    func signatureRoundTrips(saltLength: Int) throws {
        let key = try TestKeys.rsa(.unrelated)
        let publicKey = try key.publicKey
        let signature = try key.signPS256(Self.message, saltLength: saltLength)
        #expect(signature.count == 256)
        #expect(publicKey.isValidPS256(signature: signature, for: Self.message))
        #expect(!publicKey.isValidPS256(signature: signature, for: Self.message + [0]))
        #expect(!publicKey.isValidPS256(signature: signature, for: Self.message.dropLast()))
        var tampered = signature
        tampered[100] ^= 0x10
        #expect(!publicKey.isValidPS256(signature: tampered, for: Self.message))
        // Another key's signature of the same message.
        let other = try PrivateKey(pem: try fixture("rfc7515-a2-rsa-private.pem"))
        #expect(
            !publicKey.isValidPS256(
                signature: try other.signPS256(Self.message, saltLength: saltLength), for: Self.message))
    }

    /// A salt past the key's room, or one of OpenSSL's negative special values, is refused.
    @Test(arguments: [-1, -2, -3, maximumSalt(bits: 2048) + 1])
    func saltLengthOutsideTheKeysRangeIsRefused(saltLength: Int) throws {
        let key = try TestKeys.rsa(.unrelated)
        #expect(throws: CryptoError(.invalidKey, "")) { try key.signPS256(Self.message, saltLength: saltLength) }
    }

    @Test func ps256AndRS256AreNotInterchangeable() throws {
        let key = try TestKeys.rsa(.unrelated)
        let publicKey = try key.publicKey
        let ps256 = try key.signPS256(Self.message), rs256 = try key.signRS256(Self.message)
        #expect(publicKey.isValidPS256(signature: ps256, for: Self.message))
        #expect(publicKey.isValidRS256(signature: rs256, for: Self.message))
        #expect(!publicKey.isValidRS256(signature: ps256, for: Self.message))
        #expect(!publicKey.isValidPS256(signature: rs256, for: Self.message))
    }

    /// RFC 8017 §8.1.2 step 1: a signature not exactly the modulus's length is invalid. OpenSSL's
    /// PSS verification would read one with its leading zero byte dropped as the same number.
    @Test func signatureWithoutItsLeadingZeroByteIsRefused() throws {
        let key = try TestKeys.rsa(.unrelated)
        let publicKey = try key.publicKey
        // About one signature in 256 starts with a zero byte.
        var found: (message: Data, signature: Data)?
        for attempt in 0..<4096 where found == nil {
            let message = Data("leading zero \(attempt)".utf8)
            let signature = try key.signPS256(message)
            if signature.first == 0 { found = (message, signature) }
        }
        let (message, signature) = try #require(found)
        #expect(publicKey.isValidPS256(signature: signature, for: message))
        #expect(!publicKey.isValidPS256(signature: signature.dropFirst(), for: message))
        #expect(!publicKey.isValidPS256(signature: Data([0]) + signature, for: message))
    }

    /// The same rule for RS256 (RFC 8017 §8.2.2 step 1). OpenSSL's PKCS#1 verification refuses a
    /// signature of another length itself; held here so that a change of verifier keeps it.
    @Test func rs256SignatureWithoutItsLeadingZeroByteIsRefused() throws {
        let key = try TestKeys.rsa(.unrelated)
        let publicKey = try key.publicKey
        var found: (message: Data, signature: Data)?
        for attempt in 0..<4096 where found == nil {
            let message = Data("leading zero \(attempt)".utf8)
            let signature = try key.signRS256(message)
            if signature.first == 0 { found = (message, signature) }
        }
        let (message, signature) = try #require(found)
        #expect(publicKey.isValidRS256(signature: signature, for: message))
        #expect(!publicKey.isValidRS256(signature: signature.dropFirst(), for: message))
        #expect(!publicKey.isValidRS256(signature: Data([0]) + signature, for: message))
    }

    @Test func rsaKeyUnder2048BitsIsRefused() throws {
        let key = try PrivateKey.generateRSA(bits: 1024)
        let signature = try key.signPS256(Self.message)
        #expect(!(try key.publicKey.isValidPS256(signature: signature, for: Self.message)))
        #expect(try key.publicKey.isValidRS256(signature: try key.signRS256(Self.message), for: Self.message))
    }

    @Test func p256KeyIsRefusedWithoutACrash() throws {
        let key = try PrivateKey.generateP256()
        let publicKey = try key.publicKey
        for signature in [Data(), Data(count: 64), Data(count: 256), try key.signECDSASHA256DER(Self.message)] {
            #expect(!publicKey.isValidPS256(signature: signature, for: Self.message))
        }
        #expect(throws: CryptoError(.invalidKey, "")) { try key.signPS256(Self.message) }
    }

    /// Inputs of every shape against a 2048-bit key: none verifies, none crashes.
    @Test func malformedInputIsRefusedWithoutACrash() throws {
        let publicKey = try TestKeys.rsa(.unrelated).publicKey
        let signature = try TestKeys.rsa(.unrelated).signPS256(Self.message)
        for candidate in [
            Data(), Data([0]), Data(count: 255), Data(count: 256), Data(repeating: 0xff, count: 256), Data(count: 257),
            Data(repeating: 0xff, count: 4096), signature[1...],
        ] {
            #expect(!publicKey.isValidPS256(signature: Data(candidate), for: Self.message))
            #expect(!publicKey.isValidPS256(signature: candidate, for: Data()))
        }
        // A signature that is a slice of a larger buffer (its indices do not start at 0).
        let slice = (Data([1, 2, 3]) + signature).dropFirst(3)
        #expect(publicKey.isValidPS256(signature: slice, for: Self.message))
    }
}
