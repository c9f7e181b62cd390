import COpenSSL
public import Foundation

/// One parsed X.509 certificate. Immutable once parsed; OpenSSL allows concurrent reads.
public final class Certificate: @unchecked Sendable, Equatable, Hashable {
    let pointer: OpaquePointer
    /// The exact DER bytes, which identify the certificate (cache keys, fingerprints).
    public let derEncoded: Data

    init(taking pointer: OpaquePointer) throws {
        self.pointer = pointer
        let length = i2d_X509(pointer, nil)
        guard length > 0 else {
            X509_free(pointer)
            throw openSSLError(.invalidCertificate, "i2d_X509")
        }
        var buffer = [UInt8](repeating: 0, count: Int(length))
        _ = buffer.withUnsafeMutableBufferPointer { out -> Int32 in
            var cursor = out.baseAddress
            return i2d_X509(pointer, &cursor)
        }
        derEncoded = Data(buffer)
    }

    public convenience init(derEncoded der: Data) throws {
        let parsed = der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            let certificate = d2i_X509(nil, &cursor, raw.count)
            // Trailing bytes after the certificate mean the input was not one DER certificate.
            if let certificate, let cursor, cursor != base + raw.count {
                X509_free(certificate)
                return nil
            }
            return certificate
        }
        guard let parsed else { throw openSSLError(.invalidCertificate, "DER certificate") }
        try self.init(taking: parsed)
    }

    /// Every `BEGIN CERTIFICATE` block in a PEM text, in order.
    public static func parsePEM(_ pem: String) throws -> [Certificate] {
        let bio = try MemoryBIO(Data(pem.utf8))
        var certificates: [Certificate] = []
        while let next = PEM_read_bio_X509(bio.pointer, nil, nil, nil) {
            certificates.append(try Certificate(taking: next))
        }
        _ = drainOpenSSLErrors()  // the loop ends on a "no start line" error
        guard !certificates.isEmpty else { throw CryptoError(.invalidCertificate, "no certificate in PEM text") }
        return certificates
    }

    /// DER or PEM, whichever the bytes are (as files given by path may be either).
    public static func parseFile(contents: Data) throws -> [Certificate] {
        if let text = String(data: contents, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
            return try parsePEM(text)
        }
        return [try Certificate(derEncoded: contents)]
    }

    deinit { X509_free(pointer) }

    public static func == (lhs: Certificate, rhs: Certificate) -> Bool { lhs.derEncoded == rhs.derEncoded }
    public func hash(into hasher: inout Hasher) { hasher.combine(derEncoded) }

    package var sha256Fingerprint: Data {
        get throws { try SHA256.hash(derEncoded) }
    }

    public var subject: String { Self.oneLine(X509_get_subject_name(pointer)) }
    public var issuer: String { Self.oneLine(X509_get_issuer_name(pointer)) }

    public var notValidBefore: Date? { Self.date(X509_get0_notBefore(pointer)) }
    public var notValidAfter: Date? { Self.date(X509_get0_notAfter(pointer)) }

    public var publicKey: PublicKey {
        get throws {
            guard let key = X509_get_pubkey(pointer) else { throw openSSLError(.invalidCertificate, "X509_get_pubkey") }
            return PublicKey(try EVPKey.checkedPublicKey(taking: key))
        }
    }

    /// The contents (`extnValue` octets) of the extension with this dotted OID, or nil if absent.
    package func extensionValue(oid: String) -> Data? {
        guard let object = OBJ_txt2obj(oid, 1) else {
            _ = drainOpenSSLErrors()
            return nil
        }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(pointer, object, -1)
        guard index >= 0, let ext = X509_get_ext(pointer, index), let value = X509_EXTENSION_get_data(ext),
            let bytes = ASN1_STRING_get0_data(value)
        else { return nil }
        return Data(bytes: bytes, count: Int(ASN1_STRING_length(value)))
    }

    public func hasExtension(oid: String) -> Bool { extensionValue(oid: oid) != nil }

    private static func oneLine(_ name: OpaquePointer?) -> String {
        guard let name, let text = X509_NAME_oneline(name, nil, 0) else { return "" }
        defer { CRYPTO_free(text, #fileID, #line) }
        return String(cString: text)
    }

    static func date(_ time: UnsafePointer<ASN1_TIME>?) -> Date? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(timegm(&parts)))
    }
}
