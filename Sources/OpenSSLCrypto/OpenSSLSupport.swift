import COpenSSL
import Foundation

/// Drains OpenSSL's thread-local error queue into one line, so a failure carries the library's
/// own reason (`ERR_get_error` text) and the next call does not see stale errors.
func drainOpenSSLErrors() -> String {
    var reasons: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return reasons.isEmpty ? "no OpenSSL error recorded" : reasons.joined(separator: "; ")
}

func openSSLError(_ code: CryptoError.Code, _ context: String) -> CryptoError {
    CryptoError(code, "\(context): \(drainOpenSSLErrors())")
}

func openSSLError(_ context: String) -> CryptoError {
    openSSLError(.openSSLFailure, context)
}

/// Calls `body` with a pointer to the bytes that is never nil, even for empty input: several
/// OpenSSL functions treat a NULL pointer as "no argument" rather than "empty argument".
func withNonNullBytes<T>(_ bytes: some ContiguousBytes, _ body: (UnsafePointer<UInt8>, Int) throws -> T) rethrows -> T {
    try bytes.withUnsafeBytes { raw in
        if let base = raw.baseAddress, raw.count > 0 {
            return try body(base.assumingMemoryBound(to: UInt8.self), raw.count)
        }
        var placeholder: UInt8 = 0
        return try withUnsafePointer(to: &placeholder) { try body($0, 0) }
    }
}

/// A memory BIO holding its own copy of some bytes, freed when the value goes away.
final class MemoryBIO {
    let pointer: OpaquePointer

    init(_ bytes: some ContiguousBytes) throws {
        guard let bio = BIO_new(BIO_s_mem()) else { throw openSSLError("BIO_new") }
        let expected = bytes.withUnsafeBytes { $0.count }
        let written = bytes.withUnsafeBytes { raw in
            raw.count == 0 ? 0 : BIO_write(bio, raw.baseAddress, Int32(raw.count))
        }
        guard written == expected else {
            BIO_free(bio)
            throw openSSLError("BIO_write")
        }
        pointer = bio
    }

    deinit { BIO_free(pointer) }
}
