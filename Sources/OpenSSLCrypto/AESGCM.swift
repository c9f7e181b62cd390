import COpenSSL
package import Foundation

/// AES-256-GCM, used to keep secrets at rest. A sealed box is `nonce (12) || ciphertext || tag (16)`.
package enum AESGCM {
    package static let keyByteCount = 32
    package static let nonceByteCount = 12
    package static let tagByteCount = 16

    package struct SealedParts: Sendable, Equatable {
        package let ciphertext: Data
        package let tag: Data
    }

    /// Encrypts with a fresh random nonce and returns the combined box.
    package static func seal(
        _ plaintext: some ContiguousBytes, key: some ContiguousBytes,
        authenticating additionalData: some ContiguousBytes = Data()
    ) throws -> Data {
        let nonce = SecureRandom.bytes(nonceByteCount)
        let parts = try seal(plaintext, key: key, nonce: nonce, authenticating: additionalData)
        return nonce + parts.ciphertext + parts.tag
    }

    /// Opens a combined box made by `seal`; fails with `.authenticationFailed` if anything was altered.
    package static func open(
        _ box: Data, key: some ContiguousBytes,
        authenticating additionalData: some ContiguousBytes = Data()
    ) throws -> Data {
        guard box.count >= nonceByteCount + tagByteCount else {
            throw CryptoError(.authenticationFailed, "sealed box is too short")
        }
        let nonce = box.prefix(nonceByteCount)
        let ciphertext = box.dropFirst(nonceByteCount).dropLast(tagByteCount)
        let tag = box.suffix(tagByteCount)
        return try open(
            ciphertext: Data(ciphertext), tag: Data(tag), key: key, nonce: Data(nonce),
            authenticating: additionalData)
    }

    /// Encryption with a caller-chosen nonce. A nonce must never be reused with the same key;
    /// this entry point exists for published test vectors.
    package static func seal(
        _ plaintext: some ContiguousBytes, key: some ContiguousBytes, nonce: Data,
        authenticating additionalData: some ContiguousBytes = Data()
    ) throws -> SealedParts {
        let context = try CipherContext(key: key, nonce: nonce, encrypt: true)
        try context.addAuthenticatedData(additionalData)
        let ciphertext = try context.update(plaintext)
        try context.finish()
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag) == 1 else {
            throw openSSLError("EVP_CTRL_GCM_GET_TAG")
        }
        return SealedParts(ciphertext: ciphertext, tag: Data(tag))
    }

    package static func open(
        ciphertext: Data, tag: Data, key: some ContiguousBytes, nonce: Data,
        authenticating additionalData: some ContiguousBytes = Data()
    ) throws -> Data {
        guard tag.count == tagByteCount else { throw CryptoError(.authenticationFailed, "tag must be 16 bytes") }
        let context = try CipherContext(key: key, nonce: nonce, encrypt: false)
        try context.addAuthenticatedData(additionalData)
        let plaintext = try context.update(ciphertext)
        var tagBytes = [UInt8](tag)
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &tagBytes) == 1 else {
            throw openSSLError("EVP_CTRL_GCM_SET_TAG")
        }
        do {
            try context.finish()
        } catch {
            _ = drainOpenSSLErrors()
            throw CryptoError(.authenticationFailed, "ciphertext or tag was altered, or the key is wrong")
        }
        return plaintext
    }
}

/// One EVP_CIPHER_CTX set up for AES-256-GCM.
private final class CipherContext {
    let pointer: OpaquePointer
    let encrypt: Bool

    init(key: some ContiguousBytes, nonce: Data, encrypt: Bool) throws {
        guard key.withUnsafeBytes({ $0.count }) == AESGCM.keyByteCount else {
            throw CryptoError(.invalidKey, "AES-256-GCM needs a 32-byte key")
        }
        guard nonce.count == AESGCM.nonceByteCount else {
            throw CryptoError(.invalidKey, "AES-GCM nonce must be 12 bytes")
        }
        guard let context = EVP_CIPHER_CTX_new() else { throw openSSLError("EVP_CIPHER_CTX_new") }
        pointer = context
        self.encrypt = encrypt
        let initialise = encrypt ? EVP_EncryptInit_ex : EVP_DecryptInit_ex
        guard initialise(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(nonce.count), nil) == 1
        else { throw openSSLError("AES-256-GCM init") }
        let ok = key.withUnsafeBytes { keyRaw in
            nonce.withUnsafeBytes { nonceRaw in
                initialise(
                    context, nil, nil,
                    keyRaw.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    nonceRaw.baseAddress?.assumingMemoryBound(to: UInt8.self))
            }
        }
        guard ok == 1 else { throw openSSLError("AES-256-GCM key setup") }
    }

    deinit { EVP_CIPHER_CTX_free(pointer) }

    func addAuthenticatedData(_ data: some ContiguousBytes) throws {
        let count = data.withUnsafeBytes { $0.count }
        guard count > 0 else { return }
        var outLength: Int32 = 0
        let ok = withNonNullBytes(data) { bytes, length in
            encrypt
                ? EVP_EncryptUpdate(pointer, nil, &outLength, bytes, Int32(length))
                : EVP_DecryptUpdate(pointer, nil, &outLength, bytes, Int32(length))
        }
        guard ok == 1 else { throw openSSLError("AES-GCM additional data") }
    }

    func update(_ data: some ContiguousBytes) throws -> Data {
        let count = data.withUnsafeBytes { $0.count }
        guard count > 0 else { return Data() }
        var output = [UInt8](repeating: 0, count: count + 16)
        var outLength: Int32 = 0
        let ok = withNonNullBytes(data) { bytes, length in
            encrypt
                ? EVP_EncryptUpdate(pointer, &output, &outLength, bytes, Int32(length))
                : EVP_DecryptUpdate(pointer, &output, &outLength, bytes, Int32(length))
        }
        guard ok == 1 else { throw openSSLError("AES-GCM update") }
        return Data(output.prefix(Int(outLength)))
    }

    func finish() throws {
        var output = [UInt8](repeating: 0, count: 16)
        var outLength: Int32 = 0
        let ok =
            encrypt
            ? EVP_EncryptFinal_ex(pointer, &output, &outLength)
            : EVP_DecryptFinal_ex(pointer, &output, &outLength)
        guard ok == 1 else { throw openSSLError("AES-GCM final") }
    }
}
