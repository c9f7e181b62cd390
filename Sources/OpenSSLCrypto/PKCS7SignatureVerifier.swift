import COpenSSL
public import Foundation

/// Authenticates a PKCS#7 SignedData container with OpenSSL's `PKCS7_verify`: every signer's
/// signature over the exact content the container carries, and every signer's certificate chained,
/// through the certificates the container carries, to one of the caller's trust roots, with each
/// certificate valid at the caller's time (as `CertificateChainVerifier` does). Only the roots
/// given here are trusted: a root inside the container is just another untrusted certificate, and
/// the system trust store is never consulted.
public struct PKCS7SignatureVerifier: Sendable {
    public let trustRoots: [Certificate]

    public init(trustRoots: [Certificate]) {
        self.trustRoots = trustRoots
    }

    /// What a verified container proves.
    public struct Verified: Sendable {
        /// The content the signatures cover, exactly as OpenSSL digested it.
        public let content: Data
        /// The certificates that signed it, one per signer.
        public let signers: [Certificate]
    }

    /// Throws `CryptoError.chainInvalid` when a signer does not chain to a trust root at `time`,
    /// `.invalidSignature` when a signature does not cover the content (or there is none), and
    /// `.invalidEncoding` when the bytes are not a PKCS#7 container.
    public func verify(der: Data, at time: Date) throws -> Verified {
        let parsed = der.withUnsafeBytes { raw -> UnsafeMutablePointer<PKCS7>? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_PKCS7(nil, &cursor, raw.count)
        }
        guard let parsed else { throw openSSLError(.invalidEncoding, "not a PKCS#7 container") }
        defer { PKCS7_free(parsed) }
        guard OBJ_obj2nid(parsed.pointee.type) == NID_pkcs7_signed else {
            throw CryptoError(.invalidEncoding, "PKCS#7 container is not SignedData")
        }

        guard !trustRoots.isEmpty else { throw CryptoError(.chainInvalid, "no trust roots configured") }
        guard let store = X509_STORE_new() else { throw openSSLError("X509_STORE_new") }
        defer { X509_STORE_free(store) }
        for root in trustRoots {
            guard X509_STORE_add_cert(store, root.pointer) == 1 else { throw openSSLError("X509_STORE_add_cert") }
        }
        guard let parameters = X509_STORE_get0_param(store) else { throw openSSLError("X509_STORE_get0_param") }
        // Setting a time also turns on X509_V_FLAG_USE_CHECK_TIME; the verification context inherits it.
        X509_VERIFY_PARAM_set_time(parameters, time_t(time.timeIntervalSince1970.rounded(.down)))

        guard let output = BIO_new(BIO_s_mem()) else { throw openSSLError("BIO_new") }
        defer { BIO_free(output) }
        // No `certs` argument: signers are found among the container's certificates, and chains are
        // built from those (untrusted) up to the store's roots. Flags 0: chain, signatures, all checked.
        let result = withExtendedLifetime(trustRoots) { PKCS7_verify(parsed, nil, store, nil, output, 0) }
        guard result == 1 else {
            let last = ERR_peek_last_error()
            guard ERR_GET_LIB(last) == ERR_LIB_PKCS7 && ERR_GET_REASON(last) == PKCS7_R_CERTIFICATE_VERIFY_ERROR else {
                throw openSSLError(.invalidSignature, "PKCS7_verify")
            }
            // PKCS7_verify attaches the X.509 reason ("Verify error:certificate has expired") as the error's data.
            var data: UnsafePointer<CChar>?
            var flags: Int32 = 0
            _ = ERR_peek_last_error_data(&data, &flags)
            let reason = (flags & ERR_TXT_STRING) != 0 ? data.map { String(cString: $0) } : nil
            throw openSSLError(.chainInvalid, "PKCS7_verify" + (reason.map { " (\($0))" } ?? ""))
        }
        return Verified(content: try Self.readAll(output), signers: try Self.signers(of: parsed))
    }

    private static func readAll(_ bio: OpaquePointer) throws -> Data {
        var content = Data()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let read = buffer.withUnsafeMutableBytes { BIO_read(bio, $0.baseAddress, Int32($0.count)) }
            if read <= 0 { break }
            content.append(contentsOf: buffer.prefix(Int(read)))
        }
        guard BIO_ctrl_pending(bio) == 0 else { throw openSSLError("BIO_read") }
        _ = drainOpenSSLErrors()  // an empty memory BIO reports a (harmless) retry condition
        return content
    }

    private static func signers(of container: UnsafeMutablePointer<PKCS7>) throws -> [Certificate] {
        guard let stack = PKCS7_get0_signers(container, nil, 0) else {
            throw openSSLError(.invalidSignature, "PKCS7_get0_signers")
        }
        let list = stack  // STACK_OF(X509), an OPENSSL_STACK underneath
        defer { OPENSSL_sk_free(list) }  // the stack does not own the certificates
        var signers: [Certificate] = []
        for index in 0..<OPENSSL_sk_num(list) {
            guard let raw = OPENSSL_sk_value(list, index), let copy = X509_dup(OpaquePointer(raw)) else {
                throw openSSLError("X509_dup")
            }
            signers.append(try Certificate(taking: copy))
        }
        return signers
    }
}
