import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

private func hex(_ text: String) throws -> Data { try #require(Hex.decode(text)) }

@Suite struct SHA256Vectors {
    // FIPS 180-2 appendix B and the well-known empty-string digest.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func publishedDigest(input: String, expected: String) throws {
        #expect(try SHA256.hex(Data(input.utf8)) == expected)
    }

    @Test func oneMillionTimesA() throws {
        #expect(
            try SHA256.hex(Data(repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

@Suite struct HMACSHA256Vectors {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String, key: String, data: String, mac: String
        var testDescription: String { name }
    }

    // RFC 4231 §4.2–4.8 (hex key, hex data, HMAC-SHA-256).
    static let cases: [Case] = [
        Case(
            name: "4.2", key: String(repeating: "0b", count: 20), data: "4869205468657265",
            mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        Case(
            name: "4.3", key: "4a656665", data: "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
            mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        Case(
            name: "4.4", key: String(repeating: "aa", count: 20), data: String(repeating: "dd", count: 50),
            mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        Case(
            name: "4.5", key: "0102030405060708090a0b0c0d0e0f10111213141516171819",
            data: String(repeating: "cd", count: 50),
            mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        Case(
            name: "4.7", key: String(repeating: "aa", count: 131),
            data: Hex.encode(Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8)),
            mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        Case(
            name: "4.8", key: String(repeating: "aa", count: 131),
            data: Hex.encode(
                Data(
                    "This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm."
                        .utf8)),
            mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test(arguments: cases)
    func rfc4231(_ vector: Case) throws {
        let mac = try HMACSHA256.authenticationCode(key: try hex(vector.key), message: try hex(vector.data))
        #expect(Hex.encode(mac) == vector.mac)
        #expect(try HMACSHA256.isValid(try hex(vector.mac), key: try hex(vector.key), message: try hex(vector.data)))
    }

    @Test func rfc4231TruncatedCase46() throws {
        let mac = try HMACSHA256.authenticationCode(
            key: Data(repeating: 0x0c, count: 20), message: Data("Test With Truncation".utf8))
        #expect(Hex.encode(mac.prefix(16)) == "a3b6167473100ee06e0c796c2955552b")
    }

    @Test func alteredMessageIsRejected() throws {
        let key = Data("secret".utf8)
        let mac = try HMACSHA256.authenticationCode(key: key, message: Data("amount=100".utf8))
        #expect(try !HMACSHA256.isValid(mac, key: key, message: Data("amount=900".utf8)))
        #expect(try !HMACSHA256.isValid(mac.prefix(31), key: key, message: Data("amount=100".utf8)))
    }

    /// Contexts are reused and re-keyed: an empty key right after another key is the empty key
    /// (OpenSSL reads a NULL key as "keep the last one"), and keys used at once on many threads
    /// never mix. Published values: HMAC-SHA256 with an empty key, of "" and of the fox sentence.
    @Test func reusedContextsTakeEachCallsOwnKey() async throws {
        let fox = Data("The quick brown fox jumps over the lazy dog".utf8)
        let withKey = Hex.encode(try HMACSHA256.authenticationCode(key: Data("key".utf8), message: fox))
        #expect(withKey == "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8")
        #expect(
            Hex.encode(try HMACSHA256.authenticationCode(key: Data(), message: Data()))
                == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        _ = try HMACSHA256.authenticationCode(key: Data("key".utf8), message: fox)
        #expect(
            Hex.encode(try HMACSHA256.authenticationCode(key: Data(), message: fox))
                == "fb011e6154a19b9a4c767373c305275a5a69e8b68b0b4c9200c383dced19a416")

        let mixed = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask {
                    let key = Data(repeating: UInt8(index), count: 1 + index * 9)
                    let expected = try? HMACSHA256.authenticationCode(key: key, message: fox)
                    return expected != nil
                        && (0..<500).allSatisfy { _ in
                            (try? HMACSHA256.authenticationCode(key: key, message: fox)) == expected
                        }
                }
            }
            return await group.reduce(into: 0) { count, same in count += same ? 0 : 1 }
        }
        #expect(mixed == 0)
    }
}

@Suite struct ConstantTimeAndRandom {
    @Test func comparesContentAndLength() {
        #expect(ConstantTime.equals(Data([1, 2, 3]), Data([1, 2, 3])))
        #expect(!ConstantTime.equals(Data([1, 2, 3]), Data([1, 2, 4])))
        #expect(!ConstantTime.equals(Data([1, 2, 3]), Data([1, 2])))
        #expect(ConstantTime.equals(Data(), Data()))
    }

    /// Secrets, tokens and ids are drawn from it: every byte asked for must be drawn, none left
    /// at zero or repeated from an earlier draw. A working CSPRNG fails these with odds far below
    /// one in 2^100.
    @Test func everyByteAskedForIsDrawn() {
        #expect(SecureRandom.bytes(0).isEmpty)
        for count in [1, 12, 32, 33, 4096] {
            let draws = (0..<64).map { _ in SecureRandom.bytes(count) }
            #expect(draws.allSatisfy { $0.count == count })
            // Each position takes more than one value over 64 draws (a byte not written stays constant).
            let stuck = (0..<count).filter { position in Set(draws.map { $0[position] }).count == 1 }
            #expect(stuck.isEmpty, "\(count) bytes: positions \(stuck.prefix(8)) never changed")
            if count >= 12 { #expect(Set(draws).count == draws.count, "\(count) bytes: a draw repeated") }
        }
        // Over 64 KiB every byte value turns up.
        #expect(Set(SecureRandom.bytes(65_536)).count == 256)
    }
}

@Suite struct AESGCMVectors {
    // "The Galois/Counter Mode of Operation" (McGrew & Viega), test cases 13, 14 and 16 (AES-256),
    // the vectors NIST's GCM validation suite reuses.
    @Test func testCase13EmptyPlaintext() throws {
        let parts = try AESGCM.seal(Data(), key: Data(repeating: 0, count: 32), nonce: Data(repeating: 0, count: 12))
        #expect(parts.ciphertext.isEmpty)
        #expect(Hex.encode(parts.tag) == "530f8afbc74536b9a963b4f1c4cb738b")
    }

    @Test func testCase14() throws {
        let parts = try AESGCM.seal(
            Data(repeating: 0, count: 16), key: Data(repeating: 0, count: 32),
            nonce: Data(repeating: 0, count: 12))
        #expect(Hex.encode(parts.ciphertext) == "cea7403d4d606b6e074ec5d3baf39d18")
        #expect(Hex.encode(parts.tag) == "d0d1c8a799996bf0265b98b5d48ab919")
    }

    @Test func testCase16WithAdditionalData() throws {
        let key = try hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = try hex("cafebabefacedbaddecaf888")
        let plaintext = try hex(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
        )
        let aad = try hex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let parts = try AESGCM.seal(plaintext, key: key, nonce: nonce, authenticating: aad)
        #expect(
            Hex.encode(parts.ciphertext)
                == "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
        )
        #expect(Hex.encode(parts.tag) == "76fc6ece0f4e1768cddf8853bb2d551b")
        let opened = try AESGCM.open(
            ciphertext: parts.ciphertext, tag: parts.tag, key: key, nonce: nonce, authenticating: aad)
        #expect(opened == plaintext)
    }

    @Test func sealedBoxRoundTripAndTamperDetection() throws {
        let key = SecureRandom.bytes(32)
        let box = try AESGCM.seal(Data("client secret".utf8), key: key, authenticating: Data("client-1".utf8))
        #expect(try AESGCM.open(box, key: key, authenticating: Data("client-1".utf8)) == Data("client secret".utf8))

        var flipped = box
        flipped[flipped.count - 20] ^= 0x01
        #expect(throws: CryptoError(.authenticationFailed, "")) {
            try AESGCM.open(flipped, key: key, authenticating: Data("client-1".utf8))
        }
        // Bound to its context: the same box under another client's id does not open.
        #expect(throws: CryptoError(.authenticationFailed, "")) {
            try AESGCM.open(box, key: key, authenticating: Data("client-2".utf8))
        }
        #expect(throws: CryptoError(.authenticationFailed, "")) {
            try AESGCM.open(box, key: SecureRandom.bytes(32), authenticating: Data("client-1".utf8))
        }
        #expect(throws: CryptoError(.invalidKey, "")) { try AESGCM.seal(Data(), key: Data(count: 16)) }
    }
}

@Suite struct Base64Strictness {
    @Test func rfc4648Vectors() {
        let vectors = [
            "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors {
            #expect(Base64.urlEncode(Data(plain.utf8)) == encoded)
            #expect(Base64.urlDecode(encoded) == Data(plain.utf8))
        }
        #expect(Base64.urlEncode(Data([0xfb, 0xff])) == "-_8")
        #expect(Base64.urlDecode("-_8") == Data([0xfb, 0xff]))
        #expect(Base64.decode("Zm9vYg==") == Data("foob".utf8))
    }

    @Test(arguments: ["Zm9v+g", "Zm9v/g", "Zm9vYg==", "Zm9 v", "Zm9v\n", "Z", "Zm9vY", "é"])
    func urlDecodeRejects(_ text: String) {
        #expect(Base64.urlDecode(text) == nil)
    }

    @Test func standardDecodeRejectsIllegalInput() {
        #expect(Base64.decode("Zm9vYg") == nil)  // missing padding
        #expect(Base64.decode("Zm9v-_==") == nil)  // url alphabet
        #expect(Base64.decode("Zm=9vYg=") == nil)  // padding in the middle
        #expect(Base64.decodeLenient("Zm9v\nYg") == Data("foob".utf8))
    }
}

@Suite struct HexChecks {
    /// `isHex` (the header check, which does not decode) says yes exactly when `decode` gives that many bytes.
    @Test func isHexAgreesWithDecode() async {
        await offThePool {
            var generator = SeededRandom()
            let alphabet = Array("0123456789abcdefABCDEFgG x-")
            var samples = [
                "", "00", "0g", String(repeating: "a", count: 64), String(repeating: "F", count: 64),
                String(repeating: "a", count: 63),
            ]
            for _ in 0..<2_000 {
                let length = [62, 63, 64, 65, 66].randomElement(using: &generator)!
                samples.append(
                    String(
                        (0..<length).map { _ in
                            Int.random(in: 0..<100, using: &generator) < 97
                                ? alphabet[Int.random(in: 0..<22, using: &generator)]
                                : alphabet.randomElement(using: &generator)!
                        }))
            }
            for sample in samples {
                #expect(
                    Hex.isHex(sample, byteCount: 32) == (Hex.decode(sample)?.count == 32),
                    "\(sample) (\(generator.replay))")
            }
            #expect(
                samples.contains { Hex.isHex($0, byteCount: 32) }
                    && samples.contains { !Hex.isHex($0, byteCount: 32) && $0.count == 64 })
        }
    }
}
