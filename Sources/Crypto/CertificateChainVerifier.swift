import COpenSSL
public import Foundation

/// Verifies that a leaf certificate chains, through the given intermediates, to one of the
/// caller's trust roots, with every certificate valid at the caller's time. Only the roots given
/// here are trusted; the system trust store is never consulted.
public struct CertificateChainVerifier: Sendable {
    public let trustRoots: [Certificate]

    public init(trustRoots: [Certificate]) {
        self.trustRoots = trustRoots
    }

    /// Throws `CryptoError.chainInvalid` naming OpenSSL's reason if the chain does not verify.
    public func verify(leaf: Certificate, intermediates: [Certificate], at time: Date) throws {
        guard !trustRoots.isEmpty else { throw CryptoError(.chainInvalid, "no trust roots configured") }
        guard let store = X509_STORE_new() else { throw openSSLError("X509_STORE_new") }
        defer { X509_STORE_free(store) }
        for root in trustRoots {
            guard X509_STORE_add_cert(store, root.pointer) == 1 else { throw openSSLError("X509_STORE_add_cert") }
        }
        guard let untrusted = OPENSSL_sk_new_null() else { throw openSSLError("OPENSSL_sk_new_null") }
        defer { OPENSSL_sk_free(untrusted) }  // the stack does not own the certificates
        for certificate in intermediates {
            guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(certificate.pointer)) > 0 else {
                throw openSSLError("OPENSSL_sk_push")
            }
        }
        guard let context = X509_STORE_CTX_new() else { throw openSSLError("X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
            throw openSSLError("X509_STORE_CTX_init")
        }
        // Setting a time also turns on X509_V_FLAG_USE_CHECK_TIME.
        X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(context), time_t(time.timeIntervalSince1970.rounded(.down)))
        let result = withExtendedLifetime((trustRoots, intermediates, leaf)) { X509_verify_cert(context) }
        guard result == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let reason = String(cString: X509_verify_cert_error_string(Int(code)))
            _ = drainOpenSSLErrors()
            throw CryptoError(.chainInvalid, "certificate chain rejected: \(reason)")
        }
    }
}
