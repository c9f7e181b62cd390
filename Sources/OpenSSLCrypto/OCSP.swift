import COpenSSL
public import Foundation

/// What an OCSP responder says about one certificate.
public enum OCSPStatus: Sendable, Equatable {
    case good
    case revoked
    case unknown
}

/// One OCSP question (RFC 6960) about a certificate, and the reading of its answer. The
/// transport (an HTTP POST to `responderURL`) is the caller's.
public struct OCSPQuery: Sendable {
    public let requestDER: Data
    /// The certificate's own responder (from its Authority Information Access extension).
    public let responderURL: String?
    private let certificateID: CertificateID

    public init(certificate: Certificate, issuer: Certificate) throws {
        guard let id = OCSP_cert_to_id(EVP_sha1(), certificate.pointer, issuer.pointer) else {
            throw openSSLError("OCSP_cert_to_id")
        }
        certificateID = CertificateID(taking: id)
        guard let request = OCSP_REQUEST_new() else { throw openSSLError("OCSP_REQUEST_new") }
        defer { OCSP_REQUEST_free(request) }
        guard let copy = OCSP_CERTID_dup(id), OCSP_request_add0_id(request, copy) != nil else {
            throw openSSLError("OCSP_request_add0_id")
        }
        let length = i2d_OCSP_REQUEST(request, nil)
        guard length > 0 else { throw openSSLError("i2d_OCSP_REQUEST") }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        _ = bytes.withUnsafeMutableBufferPointer { out -> Int32 in
            var cursor = out.baseAddress
            return i2d_OCSP_REQUEST(request, &cursor)
        }
        requestDER = Data(bytes)
        responderURL = Self.responderURL(of: certificate)
    }

    /// Reads a responder's answer: it must be successful, signed by the issuer (or a responder
    /// the issuer delegated to) chaining to `trustRoots`, current, and about this certificate.
    public func evaluate(responseDER: Data, issuer: Certificate, trustRoots: [Certificate]) throws -> OCSPStatus {
        let response = responseDER.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_OCSP_RESPONSE(nil, &cursor, raw.count)
        }
        guard let response else { throw openSSLError(.invalidEncoding, "not an OCSP response") }
        defer { OCSP_RESPONSE_free(response) }
        guard OCSP_response_status(response) == OCSP_RESPONSE_STATUS_SUCCESSFUL,
            let basic = OCSP_response_get1_basic(response)
        else {
            throw CryptoError(.invalidSignature, "OCSP responder did not answer successfully")
        }
        defer { OCSP_BASICRESP_free(basic) }

        guard let store = X509_STORE_new() else { throw openSSLError("X509_STORE_new") }
        defer { X509_STORE_free(store) }
        for root in trustRoots { X509_STORE_add_cert(store, root.pointer) }
        guard let untrusted = OPENSSL_sk_new_null() else { throw openSSLError("OPENSSL_sk_new_null") }
        defer { OPENSSL_sk_free(untrusted) }
        _ = OPENSSL_sk_push(untrusted, UnsafeRawPointer(issuer.pointer))
        let verified = withExtendedLifetime((issuer, trustRoots)) { OCSP_basic_verify(basic, untrusted, store, 0) }
        guard verified == 1 else { throw openSSLError(.invalidSignature, "OCSP response signature") }

        var status: Int32 = -1, reason: Int32 = -1
        var revokedAt: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?,
            thisUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        var nextUpdate: UnsafeMutablePointer<ASN1_GENERALIZEDTIME>?
        guard
            OCSP_resp_find_status(basic, certificateID.pointer, &status, &reason, &revokedAt, &thisUpdate, &nextUpdate)
                == 1
        else {
            throw CryptoError(.invalidSignature, "OCSP response does not mention the certificate")
        }
        guard OCSP_check_validity(thisUpdate, nextUpdate, 300, -1) == 1 else {
            _ = drainOpenSSLErrors()
            throw CryptoError(.invalidSignature, "OCSP response is stale")
        }
        switch status {
        case V_OCSP_CERTSTATUS_GOOD: return .good
        case V_OCSP_CERTSTATUS_REVOKED: return .revoked
        default: return .unknown
        }
    }

    static func responderURL(of certificate: Certificate) -> String? {
        guard let list = X509_get1_ocsp(certificate.pointer) else { return nil }
        defer { X509_email_free(list) }
        let stack = list
        guard OPENSSL_sk_num(stack) > 0, let first = OPENSSL_sk_value(stack, 0) else { return nil }
        return String(cString: first.assumingMemoryBound(to: CChar.self))
    }
}

private final class CertificateID: @unchecked Sendable {
    let pointer: OpaquePointer
    init(taking pointer: OpaquePointer) { self.pointer = pointer }
    deinit { OCSP_CERTID_free(pointer) }
}

extension Certificate {
    /// True if `self` issued `certificate` (names and key identifiers match, and the signature verifies).
    public func isIssuer(of certificate: Certificate) -> Bool {
        let matches = X509_check_issued(pointer, certificate.pointer) == X509_V_OK
        guard matches, let key = X509_get0_pubkey(pointer) else { return false }
        return X509_verify(certificate.pointer, key) == 1
    }
}
