import COpenSSL
public import Foundation

/// SHA-256 through OpenSSL's EVP interface, with the method fetched once (`sha256Method`): every
/// request's body is hashed for its signature, and an implicit `EVP_sha256()` is a provider lookup each time.
public enum SHA256 {
    public static let byteCount = 32

    public static func hash(_ data: some ContiguousBytes) -> Data {
        // EVP_Digest with a built-in algorithm fails only when the process is out of memory.
        guard let digest = digest(data) else { preconditionFailure("EVP_Digest(SHA-256) failed: \(drainOpenSSLErrors())") }
        return Data(digest)
    }

    /// The 32 bytes, or nil if OpenSSL fails.
    static func digest(_ data: some ContiguousBytes) -> [UInt8]? {
        var digest = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let ok = withNonNullBytes(data) { pointer, count in
            EVP_Digest(pointer, count, &digest, &length, sha256Method, nil)
        }
        return ok == 1 && length == 32 ? digest : nil
    }

    public static func hex(_ data: some ContiguousBytes) -> String {
        Hex.encode(hash(data))
    }
}

/// HMAC-SHA256 (RFC 2104) through OpenSSL.
public enum HMACSHA256 {
    public static func authenticationCode(key: some ContiguousBytes, message: some ContiguousBytes) -> Data {
        var mac = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = withNonNullBytes(key) { keyPointer, keyCount in
            withNonNullBytes(message) { messagePointer, messageCount in
                HMAC(EVP_sha256(), keyPointer, Int32(keyCount), messagePointer, messageCount, &mac, &length)
            }
        }
        precondition(result != nil && length == 32, "HMAC-SHA256 failed: \(drainOpenSSLErrors())")
        return Data(mac)
    }

    /// Checks a MAC in constant time.
    public static func isValid(_ mac: some ContiguousBytes, key: some ContiguousBytes, message: some ContiguousBytes) -> Bool {
        ConstantTime.equals(authenticationCode(key: key, message: message), mac)
    }
}

public enum ConstantTime {
    /// Compares two byte strings without leaking, through timing, where they first differ.
    /// Different lengths compare unequal (the length itself is not secret).
    public static func equals(_ lhs: some ContiguousBytes, _ rhs: some ContiguousBytes) -> Bool {
        lhs.withUnsafeBytes { left in
            rhs.withUnsafeBytes { right in
                guard left.count == right.count else { return false }
                guard let l = left.baseAddress, let r = right.baseAddress else { return left.count == 0 }
                return CRYPTO_memcmp(l, r, left.count) == 0
            }
        }
    }
}

public enum SecureRandom {
    /// Bytes from OpenSSL's CSPRNG.
    public static func bytes(_ count: Int) -> Data {
        var buffer = [UInt8](repeating: 0, count: count)
        if count > 0 {
            let ok = RAND_bytes(&buffer, Int32(count))
            // A CSPRNG that cannot produce bytes must stop the process, never fall back.
            precondition(ok == 1, "RAND_bytes failed: \(drainOpenSSLErrors())")
        }
        return Data(buffer)
    }
}
