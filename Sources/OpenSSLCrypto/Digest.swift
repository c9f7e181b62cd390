import COpenSSL
public import Foundation

/// SHA-256 through OpenSSL's EVP interface, with the method fetched once (`DigestMethod.sha256`):
/// every request's body is hashed for its signature, and an implicit `EVP_sha256()` is a provider
/// lookup each time. OpenSSL failing (out of memory, a provider missing) throws, with its reason.
public enum SHA256 {
    package static let byteCount = 32

    public static func hash(_ data: some ContiguousBytes) throws -> Data {
        Data(try DigestMethod.sha256.hash(data))
    }

    /// The 32 bytes, or nil if OpenSSL fails: for verification, where a failure is a refusal.
    static func digest(_ data: some ContiguousBytes) -> [UInt8]? {
        try? DigestMethod.sha256.hash(data)
    }

    public static func hex(_ data: some ContiguousBytes) throws -> String {
        Hex.encode(try hash(data))
    }
}

/// SHA-1 through OpenSSL, for the one place it is still a store's wire format (Xsolla signs its
/// webhooks with SHA-1 over the body and the secret). Nothing of ours is signed with it.
public enum SHA1 {
    public static func hash(_ data: some ContiguousBytes) throws -> Data {
        Data(try DigestMethod.sha1.hash(data))
    }
}

/// A digest algorithm fetched from OpenSSL by name, once; fetched algorithms may be shared
/// between threads. A name OpenSSL does not know keeps its reason, thrown on every use.
final class DigestMethod: @unchecked Sendable {
    static let sha256 = DigestMethod("SHA256")
    static let sha1 = DigestMethod("SHA1")

    let name: String
    let method: OpaquePointer?
    /// The digest's length in bytes.
    let size: Int
    private let unavailable: String?

    init(_ name: String) {
        self.name = name
        method = EVP_MD_fetch(nil, name, nil)
        size = method.map { Int(EVP_MD_get_size($0)) } ?? 0
        unavailable = method == nil ? drainOpenSSLErrors() : nil
    }

    deinit { if let method { EVP_MD_free(method) } }

    func hash(_ data: some ContiguousBytes) throws -> [UInt8] {
        guard let method else { throw CryptoError(.openSSLFailure, "EVP_MD_fetch(\(name)): \(unavailable ?? "")") }
        guard size > 0 else { throw CryptoError(.openSSLFailure, "\(name) has no fixed digest length") }
        var digest = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        let ok = withNonNullBytes(data) { pointer, count in
            EVP_Digest(pointer, count, &digest, &length, method, nil)
        }
        guard ok == 1, Int(length) == size else { throw openSSLError("EVP_Digest(\(name))") }
        return digest
    }
}

/// HMAC-SHA256 (RFC 2104) through OpenSSL's EVP_MAC, fetched once, with contexts reused: every
/// signed request is checked with an HMAC, and the one-shot `HMAC()` looked the algorithm and its
/// digest up and built and freed a context each time (about ten allocations and 1.3 µs a call).
/// A context is re-keyed on every use; the key pointer is never NULL (`withNonNullBytes`), which
/// OpenSSL would take as "keep the previous key".
package enum HMACSHA256 {
    /// Fetched once and only read afterwards (OpenSSL's fetched algorithms are shareable between threads).
    nonisolated(unsafe) private static let algorithm: OpaquePointer? = EVP_MAC_fetch(nil, "HMAC", nil)
    private static let idle = IdleList<OpaquePointer>(limit: 32) { EVP_MAC_CTX_free($0) }

    package static func authenticationCode(key: some ContiguousBytes, message: some ContiguousBytes) throws -> Data {
        var mac = [UInt8](repeating: 0, count: 32)
        var length = 0
        guard let context = idle.take(orMake: makeContext) else { throw openSSLError("HMAC-SHA256 context") }
        let ok = withNonNullBytes(key) { keyPointer, keyCount in
            withNonNullBytes(message) { messagePointer, messageCount in
                EVP_MAC_init(context, keyPointer, keyCount, nil) == 1
                    && EVP_MAC_update(context, messagePointer, messageCount) == 1
                    && EVP_MAC_final(context, &mac, &length, mac.count) == 1
            }
        }
        guard ok, length == 32 else {
            EVP_MAC_CTX_free(context)
            throw openSSLError("HMAC-SHA256")
        }
        idle.giveBack(context)
        return Data(mac)
    }

    private static func makeContext() -> OpaquePointer? {
        guard let algorithm, let context = EVP_MAC_CTX_new(algorithm) else { return nil }
        let set = "digest".withCString { name in
            "SHA256".withCString { digest in
                var parameters = [
                    OSSL_PARAM_construct_utf8_string(name, UnsafeMutablePointer(mutating: digest), 0),
                    OSSL_PARAM_construct_end(),
                ]
                return EVP_MAC_CTX_set_params(context, &parameters)
            }
        }
        guard set == 1 else {
            EVP_MAC_CTX_free(context)
            return nil
        }
        return context
    }

    /// Checks a MAC in constant time. Throws when OpenSSL cannot compute one (never a `false`
    /// standing in for a failure of ours).
    package static func isValid(
        _ mac: some ContiguousBytes, key: some ContiguousBytes, message: some ContiguousBytes
    ) throws -> Bool {
        ConstantTime.equals(try authenticationCode(key: key, message: message), mac)
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
