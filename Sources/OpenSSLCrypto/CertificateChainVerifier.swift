import COpenSSL
public import Foundation

/// Verifies that a leaf certificate chains, through the given intermediates, to one of the
/// caller's trust roots, with every certificate valid at the caller's time. Only the roots given
/// here are trusted; the system trust store is never consulted.
public struct CertificateChainVerifier: Sendable {
    public let trustRoots: [Certificate]
    /// OpenSSL's X509_V_FLAG_X509_STRICT: RFC 5280 conformance checks on every certificate
    /// (what Apple's own libraries ask of App Store chains).
    public let strict: Bool

    public init(trustRoots: [Certificate], strict: Bool = false) {
        self.trustRoots = trustRoots
        self.strict = strict
    }

    /// When the verified chain, root included, is valid as a whole.
    public struct ValidityWindow: Sendable, Equatable {
        package let notBefore: Date
        public let notAfter: Date
        /// How many certificates the verified chain holds, root included.
        public let length: Int

        package init(notBefore: Date, notAfter: Date, length: Int) {
            self.notBefore = notBefore
            self.notAfter = notAfter
            self.length = length
        }

        public func contains(_ date: Date) -> Bool { date >= notBefore && date <= notAfter }
    }

    /// Throws `CryptoError.chainInvalid` naming OpenSSL's reason if the chain does not verify.
    /// Returns the window in which every certificate of the verified chain is valid.
    @discardableResult
    public func verify(leaf: Certificate, intermediates: [Certificate], at time: Date) throws -> ValidityWindow {
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
        let parameters = X509_STORE_CTX_get0_param(context)
        // Setting a time also turns on X509_V_FLAG_USE_CHECK_TIME.
        X509_VERIFY_PARAM_set_time(parameters, time_t(time.timeIntervalSince1970.rounded(.down)))
        if strict { X509_VERIFY_PARAM_set_flags(parameters, UInt(X509_V_FLAG_X509_STRICT)) }
        let result = withExtendedLifetime((trustRoots, intermediates, leaf)) { X509_verify_cert(context) }
        guard result == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let reason = String(cString: X509_verify_cert_error_string(Int(code)))
            _ = drainOpenSSLErrors()
            throw CryptoError(.chainInvalid, "certificate chain rejected: \(reason)")
        }
        var notBefore = Date.distantPast, notAfter = Date.distantFuture
        var length = 0
        if let chain = X509_STORE_CTX_get0_chain(context) {
            length = Int(OPENSSL_sk_num(chain))
            for index in 0..<OPENSSL_sk_num(chain) {
                guard let raw = OPENSSL_sk_value(chain, index) else { continue }
                let certificate = OpaquePointer(raw)
                if let start = Certificate.date(X509_get0_notBefore(certificate)) { notBefore = max(notBefore, start) }
                if let end = Certificate.date(X509_get0_notAfter(certificate)) { notAfter = min(notAfter, end) }
            }
        }
        return ValidityWindow(notBefore: notBefore, notAfter: notAfter, length: length)
    }
}
