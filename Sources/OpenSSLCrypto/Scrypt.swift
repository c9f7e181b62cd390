import COpenSSL
package import Foundation

/// scrypt (RFC 7914) from OpenSSL (`EVP_PBE_scrypt`), and password hashes built on it: a
/// random salt per password, the parameters kept beside the hash so they can grow later.
public enum Scrypt {
    public struct Parameters: Sendable, Equatable {
        public var n: UInt64
        package var r: UInt64
        public var p: UInt64

        package init(n: UInt64, r: UInt64, p: UInt64) {
            self.n = n
            self.r = r
            self.p = p
        }

        /// 16 MiB of memory per hash: interactive logins stay fast, guessing stays expensive.
        public static let passwords = Parameters(n: 1 << 14, r: 8, p: 1)
    }

    /// The derived key of `password` and `salt`.
    package static func derive(
        password: some ContiguousBytes, salt: some ContiguousBytes, parameters: Parameters, length: Int
    ) throws -> Data {
        guard length > 0, length <= 1024, parameters.n > 1, parameters.n & (parameters.n - 1) == 0,
            parameters.n <= 1 << 20,
            (1...64).contains(parameters.r), (1...64).contains(parameters.p)
        else {
            throw CryptoError(.openSSLFailure, "scrypt parameters out of range")
        }
        // Enough for 128·N·r (V) plus 128·r·p (B), with room to spare.
        let maxMemory = 128 * parameters.n * parameters.r * (parameters.p + 2) + (1 << 20)
        var output = [UInt8](repeating: 0, count: length)
        let ok = withNonNullBytes(password) { passwordPointer, passwordCount in
            withNonNullBytes(salt) { saltPointer, saltCount in
                passwordPointer.withMemoryRebound(to: CChar.self, capacity: max(passwordCount, 1)) { passwordChars in
                    EVP_PBE_scrypt(
                        passwordChars, passwordCount, saltPointer, saltCount, parameters.n, parameters.r, parameters.p,
                        maxMemory, &output, length)
                }
            }
        }
        guard ok == 1 else { throw openSSLError("EVP_PBE_scrypt") }
        return Data(output)
    }

    /// `scrypt$N$r$p$salt$hash` (base64url), for storing.
    public static func hashPassword(_ password: String, parameters: Parameters = .passwords) throws -> String {
        let salt = SecureRandom.bytes(16)
        let hash = try derive(password: Data(password.utf8), salt: salt, parameters: parameters, length: 32)
        return
            "scrypt$\(parameters.n)$\(parameters.r)$\(parameters.p)$\(Base64.urlEncode(salt))$\(Base64.urlEncode(hash))"
    }

    /// Whether `password` matches a stored `hashPassword` result (compared in constant time).
    package static func verifyPassword(_ password: String, hash stored: String) -> Bool {
        let parts = stored.split(separator: "$").map(String.init)
        guard parts.count == 6, parts[0] == "scrypt", let n = UInt64(parts[1]), let r = UInt64(parts[2]),
            let p = UInt64(parts[3]),
            let salt = Base64.urlDecode(parts[4]), let expected = Base64.urlDecode(parts[5]), !expected.isEmpty,
            let actual = try? derive(
                password: Data(password.utf8), salt: salt, parameters: Parameters(n: n, r: r, p: p),
                length: expected.count)
        else { return false }
        return ConstantTime.equals(actual, expected)
    }
}
