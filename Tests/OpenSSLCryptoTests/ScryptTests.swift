import Foundation
import OpenSSLCrypto
import Testing

@Suite struct ScryptTests {
    /// RFC 7914 §12, the second and third vectors.
    @Test(arguments: [
        (
            "password", "NaCl", UInt64(1024), UInt64(8), UInt64(16),
            "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        ),
        (
            "pleaseletmein", "SodiumChloride", UInt64(16384), UInt64(8), UInt64(1),
            "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"
        ),
    ])
    func rfc7914Vectors(password: String, salt: String, n: UInt64, r: UInt64, p: UInt64, expected: String) throws {
        let key = try Scrypt.derive(
            password: Data(password.utf8), salt: Data(salt.utf8), parameters: .init(n: n, r: r, p: p), length: 64)
        #expect(Hex.encode(key) == expected)
    }

    @Test func passwordHashesAreSaltedAndVerify() throws {
        let first = try Scrypt.hashPassword("correct horse")
        let second = try Scrypt.hashPassword("correct horse")
        #expect(first != second, "a fresh salt per password")
        #expect(!first.contains("correct"))
        #expect(Scrypt.verifyPassword("correct horse", hash: first))
        #expect(!Scrypt.verifyPassword("correct horsE", hash: first))
        #expect(!Scrypt.verifyPassword("correct horse", hash: "scrypt$1$1$1$$"))
    }
}
