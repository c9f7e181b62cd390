import COpenSSL
public import Foundation

/// Issues X.509 v3 certificates. Production code only reads certificates; this exists so tests
/// and staging can mint a throwaway PKI (roots, intermediates with Apple-style marker extensions,
/// expired leaves) instead of shipping fixtures that silently age.
public struct CertificateBuilder {
    public var subjectCommonName: String
    /// The whole subject name, attribute by attribute in order (e.g. `[("C", "US"), ("O", "Apple Inc."),
    /// ("CN", "Apple Root CA")]`); when empty, the subject is `CN=subjectCommonName`.
    package var subjectName: [(field: String, value: String)] = []
    public var serialNumber: Int = 1
    public var notValidBefore: Date
    public var notValidAfter: Date
    public var isCertificateAuthority = false
    /// Authority Information Access: where an OCSP responder answers for this certificate.
    package var ocspResponderURL: String?
    /// Extra extensions by dotted OID; the value is stored as the extension's octets.
    public var customExtensions: [(oid: String, value: Data, critical: Bool)] = []

    public init(subjectCommonName: String, notValidBefore: Date, notValidAfter: Date) {
        self.subjectCommonName = subjectCommonName
        self.notValidBefore = notValidBefore
        self.notValidAfter = notValidAfter
    }

    /// Signs with `issuerKey`; `issuer` nil means self-signed (its own subject is the issuer).
    public func build(subjectKey: PrivateKey, issuer: Certificate?, issuerKey: PrivateKey) throws -> Certificate {
        guard let certificate = X509_new() else { throw openSSLError("X509_new") }
        var owned = true
        defer { if owned { X509_free(certificate) } }

        guard X509_set_version(certificate, 2) == 1,
            ASN1_INTEGER_set(X509_get_serialNumber(certificate), serialNumber) == 1,
            ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(notValidBefore.timeIntervalSince1970)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(notValidAfter.timeIntervalSince1970)) != nil,
            X509_set_pubkey(certificate, subjectKey.key.pointer) == 1
        else { throw openSSLError("X509 fields") }

        guard let name = X509_NAME_new() else { throw openSSLError("X509_NAME_new") }
        defer { X509_NAME_free(name) }
        for (field, value) in subjectName.isEmpty ? [("CN", subjectCommonName)] : subjectName {
            let bytes = Array(value.utf8)
            guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else {
                throw openSSLError("X509_NAME_add_entry_by_txt(\(field))")
            }
        }
        guard X509_set_subject_name(certificate, name) == 1,
            X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0.pointer) } ?? name) == 1
        else { throw openSSLError("X509 names") }

        // Key identifiers link each certificate to its issuer's key; strict verification needs them.
        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuer?.pointer ?? certificate, certificate, nil, nil, 0)
        try addExtension(
            certificate, nid: NID_basic_constraints,
            value: isCertificateAuthority ? "critical,CA:TRUE" : "critical,CA:FALSE", context: &context)
        try addExtension(
            certificate, nid: NID_key_usage,
            value: isCertificateAuthority ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature",
            context: &context)
        try addExtension(certificate, nid: NID_subject_key_identifier, value: "hash", context: &context)
        if issuer != nil {
            try addExtension(certificate, nid: NID_authority_key_identifier, value: "keyid:always", context: &context)
        }
        if let ocspResponderURL {
            try addExtension(
                certificate, nid: NID_info_access, value: "OCSP;URI:\(ocspResponderURL)", context: &context)
        }
        for custom in customExtensions {
            try addCustomExtension(certificate, oid: custom.oid, value: custom.value, critical: custom.critical)
        }

        guard X509_sign(certificate, issuerKey.key.pointer, EVP_sha256()) > 0 else { throw openSSLError("X509_sign") }
        owned = false
        return try Certificate(taking: certificate)
    }

    private func addExtension(_ certificate: OpaquePointer, nid: Int32, value: String, context: inout X509V3_CTX) throws
    {
        guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
            throw openSSLError("X509V3_EXT_conf_nid")
        }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(certificate, ext, -1) == 1 else { throw openSSLError("X509_add_ext") }
    }

    private func addCustomExtension(_ certificate: OpaquePointer, oid: String, value: Data, critical: Bool) throws {
        guard let object = OBJ_txt2obj(oid, 1) else { throw openSSLError("OBJ_txt2obj(\(oid))") }
        defer { ASN1_OBJECT_free(object) }
        guard let octets = ASN1_OCTET_STRING_new() else { throw openSSLError("ASN1_OCTET_STRING_new") }
        defer { ASN1_OCTET_STRING_free(octets) }
        let bytes = [UInt8](value)
        guard ASN1_OCTET_STRING_set(octets, bytes, Int32(bytes.count)) == 1,
            let ext = X509_EXTENSION_create_by_OBJ(nil, object, critical ? 1 : 0, octets)
        else { throw openSSLError("X509_EXTENSION_create_by_OBJ") }
        defer { X509_EXTENSION_free(ext) }
        guard X509_add_ext(certificate, ext, -1) == 1 else { throw openSSLError("X509_add_ext") }
    }
}
