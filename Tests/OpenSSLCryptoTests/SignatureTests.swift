import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

func fixture(_ name: String) throws -> String {
    let url = try #require(Bundle.module.url(forResource: "Fixtures/\(name)", withExtension: nil))
    return try String(contentsOf: url, encoding: .utf8)
}

enum RFC7515 {
    static let signingInput =
        "eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
    static let es256Signature = "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q"
    static let x = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
    static let y = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
    static let rs256SigningInput =
        "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
    static let rs256Signature =
        "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw"

    static func publicKey() throws -> PublicKey {
        try PublicKey(p256X: try #require(Base64.urlDecode(x)), y: try #require(Base64.urlDecode(y)))
    }
}

@Suite struct ES256 {
    @Test func rfc7515AppendixA3SignatureVerifies() throws {
        let signature = try #require(Base64.urlDecode(RFC7515.es256Signature))
        let key = try RFC7515.publicKey()
        #expect(key.isValidES256(signature: signature, for: Data(RFC7515.signingInput.utf8)))

        var tampered = signature
        tampered[10] ^= 1
        #expect(!key.isValidES256(signature: tampered, for: Data(RFC7515.signingInput.utf8)))
        #expect(!key.isValidES256(signature: signature, for: Data((RFC7515.signingInput + "x").utf8)))
        #expect(!key.isValidES256(signature: signature.prefix(63), for: Data(RFC7515.signingInput.utf8)))
    }

    @Test func rfc7515CompactTokenParsesAndVerifies() throws {
        let jws = try CompactJWS(parsing: RFC7515.signingInput + "." + RFC7515.es256Signature)
        #expect(jws.header.alg == "ES256")
        #expect(String(decoding: jws.payload, as: UTF8.self).contains("\"iss\":\"joe\""))
        #expect(jws.isValidSignature(using: try RFC7515.publicKey()))
        // The same key and signature under an algorithm the caller did not allow: refused.
        #expect(!jws.isValidSignature(using: try RFC7515.publicKey(), allowedAlgorithms: ["RS256"]))
    }

    @Test func signatureFromTheRFCKeyVerifiesWithTheRFCPublicKey() throws {
        let privateKey = try PrivateKey(pem: try fixture("rfc7515-a3-ec-private.pem"))
        let message = Data("ReceiptGate".utf8)
        let signature = try privateKey.signES256(message)
        #expect(signature.count == 64)
        #expect(try RFC7515.publicKey().isValidES256(signature: signature, for: message))
    }

    /// Our raw → DER conversion checked by an implementation we did not write: `openssl dgst`.
    @Test func opensslCommandLineAcceptsOurSignature() throws {
        let key = try PrivateKey.generateP256()
        let message = Data("cross-check".utf8)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rg-es256-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let jws = try CompactJWS.sign(payload: message, key: key)
        let parsed = try CompactJWS(parsing: jws)
        #expect(parsed.isValidSignature(using: try key.publicKey))

        // Hand openssl the DER form of our signature over the signing input.
        let derSignature = try key.signECDSASHA256DER(parsed.signingInput)
        try parsed.signingInput.write(to: directory.appendingPathComponent("input"))
        try derSignature.write(to: directory.appendingPathComponent("sig.der"))
        let spki = try key.publicKey.subjectPublicKeyInfo()
        let pem =
            "-----BEGIN PUBLIC KEY-----\n" + spki.base64EncodedString(options: .lineLength64Characters)
            + "\n-----END PUBLIC KEY-----\n"
        try pem.write(to: directory.appendingPathComponent("pub.pem"), atomically: true, encoding: .utf8)
        let status = try runOpenSSL(
            ["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "input"], in: directory)
        #expect(status == 0)
    }
}

@Suite struct RS256 {
    @Test func rfc7515AppendixA2SignatureIsReproducedExactly() throws {
        let key = try PrivateKey(pem: try fixture("rfc7515-a2-rsa-private.pem"))
        let signature = try key.signRS256(Data(RFC7515.rs256SigningInput.utf8))
        #expect(Base64.urlEncode(signature) == RFC7515.rs256Signature)
        #expect(try key.publicKey.isValidRS256(signature: signature, for: Data(RFC7515.rs256SigningInput.utf8)))
        #expect(!(try key.publicKey.isValidRS256(signature: signature, for: Data("other".utf8))))
    }

    @Test func rsaKeyCannotSignES256() throws {
        let key = try PrivateKey(pem: try fixture("rfc7515-a2-rsa-private.pem"))
        #expect(throws: CryptoError(.invalidKey, "")) { try key.signES256(Data()) }
    }
}

@Suite struct JWSParsing {
    @Test(arguments: [
        "a.b", "a.b.c.d", "", "..", "eyJhbGciOiJFUzI1NiJ9.e30.", "eyJhbGciOiJFUzI1NiJ9.e30.AA+A",
        "bm90IGpzb24.e30.AAAA", "eyJhbGciOjF9.e30.AAAA",
    ])
    func malformedTokensAreRejected(_ token: String) {
        #expect(throws: CryptoError(.malformedJWS, "")) { try CompactJWS(parsing: token) }
    }

    @Test func algNoneNeverVerifies() throws {
        let header = Base64.urlEncode(Data(#"{"alg":"none"}"#.utf8))
        let jws = try CompactJWS(parsing: "\(header).e30.AAAA")
        #expect(!jws.isValidSignature(using: try RFC7515.publicKey(), allowedAlgorithms: ["ES256", "RS256", "none"]))
    }

    @Test func signedClaimsRoundTrip() throws {
        struct Claims: Codable, Equatable { let iss: String; let exp: Int }
        let key = try PrivateKey.generateP256()
        let token = try CompactJWS.sign(
            claims: Claims(iss: "joe", exp: 1), header: JWSHeader(kid: "K1", typ: "JWT"), key: key)
        let jws = try CompactJWS(parsing: token)
        #expect(jws.header == JWSHeader(alg: "ES256", kid: "K1", typ: "JWT"))
        #expect(try JSONDecoder().decode(Claims.self, from: jws.payload) == Claims(iss: "joe", exp: 1))
        #expect(jws.isValidSignature(using: try key.publicKey))
        #expect(!jws.isValidSignature(using: try PrivateKey.generateP256().publicKey))
    }
}

func runOpenSSL(_ arguments: [String], in directory: URL) throws -> Int32 {
    // posix_spawn and waitpid (Foundation's Process was seen to hang here), in `directory`.
    try ChildProcess.runBlocking(
        "/bin/sh", ["-c", "cd \"$0\" && exec /usr/bin/openssl \"$@\"", directory.path] + arguments
    ).status
}
