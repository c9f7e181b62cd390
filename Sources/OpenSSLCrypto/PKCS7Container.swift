import COpenSSL
public import Foundation

/// A PKCS#7 SignedData container (as StoreKit 1 receipts are), parsed by OpenSSL, which reads
/// BER: indefinite lengths and constructed (chunked) octet strings included.
public struct PKCS7Container: Sendable {
    /// The signed content (`eContent`), octet strings joined.
    public let content: Data
    /// The certificates the container carries (not trusted by being here).
    public let certificates: [Certificate]

    public init(der: Data) throws {
        guard !der.isEmpty else { throw CryptoError(.invalidEncoding, "empty PKCS#7 container") }
        let parsed = der.withUnsafeBytes { raw -> UnsafeMutablePointer<PKCS7>? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_PKCS7(nil, &cursor, raw.count)
        }
        guard let parsed else { throw openSSLError(.invalidEncoding, "not a PKCS#7 container") }
        defer { PKCS7_free(parsed) }
        guard OBJ_obj2nid(parsed.pointee.type) == NID_pkcs7_signed, let signed = parsed.pointee.d.sign else {
            throw CryptoError(.invalidEncoding, "PKCS#7 container is not SignedData")
        }
        guard let inner = signed.pointee.contents, OBJ_obj2nid(inner.pointee.type) == NID_pkcs7_data,
            let octets = inner.pointee.d.data, let bytes = ASN1_STRING_get0_data(octets)
        else { throw CryptoError(.invalidEncoding, "PKCS#7 SignedData carries no data content") }
        content = Data(bytes: bytes, count: Int(ASN1_STRING_length(octets)))

        var certificates: [Certificate] = []
        if let stack = signed.pointee.cert {
            let list = stack  // STACK_OF(X509) is an OPENSSL_STACK
            for index in 0..<OPENSSL_sk_num(list) {
                guard let raw = OPENSSL_sk_value(list, index), let copy = X509_dup(OpaquePointer(raw)) else { continue }
                certificates.append(try Certificate(taking: copy))
            }
        }
        self.certificates = certificates
    }
}

/// One ASN.1 element read with OpenSSL's `ASN1_get_object`.
public struct ASN1Element: Sendable {
    package static let integerTag: Int32 = 2, octetStringTag: Int32 = 4, utf8StringTag: Int32 = 12
    package static let ia5StringTag: Int32 = 22, sequenceTag: Int32 = 16, setTag: Int32 = 17

    public let tag: Int32
    /// 0 universal, 0x40 application, 0x80 context-specific, 0xc0 private.
    package let tagClass: Int32
    public let isConstructed: Bool
    public let contents: Data

    /// Reads every element of a definite-length DER sequence of TLVs.
    public static func sequence(in data: Data) throws -> [ASN1Element] {
        try data.withUnsafeBytes { raw -> [ASN1Element] in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return [] }
            var elements: [ASN1Element] = []
            var cursor: UnsafePointer<UInt8>? = base
            let end = base + raw.count
            while let current = cursor, current < end {
                var length = 0, tag: Int32 = 0, tagClass: Int32 = 0
                let flags = ASN1_get_object(&cursor, &length, &tag, &tagClass, end - current)
                guard flags & 0x80 == 0, flags & 0x01 == 0, let start = cursor, length >= 0, start + length <= end
                else {
                    _ = drainOpenSSLErrors()
                    throw CryptoError(.invalidEncoding, "malformed ASN.1 element")
                }
                elements.append(
                    ASN1Element(
                        tag: tag, tagClass: tagClass, isConstructed: flags & 0x20 != 0,
                        contents: Data(bytes: start, count: length)))
                cursor = start + length
            }
            return elements
        }
    }

    /// The single element `data` holds.
    public static func single(in data: Data) throws -> ASN1Element {
        let elements = try sequence(in: data)
        guard elements.count == 1 else {
            throw CryptoError(.invalidEncoding, "expected one ASN.1 element, found \(elements.count)")
        }
        return elements[0]
    }

    /// A (small) INTEGER's value; nil if it does not fit in Int64.
    public var integerValue: Int64? {
        guard tag == Self.integerTag, !contents.isEmpty, contents.count <= 8 else { return nil }
        var value: Int64 = (contents.first! & 0x80) != 0 ? -1 : 0
        for byte in contents { value = value << 8 | Int64(byte) }
        return value
    }

    /// UTF8String or IA5String text.
    public var stringValue: String? {
        guard tag == Self.utf8StringTag || tag == Self.ia5StringTag else { return nil }
        return String(data: contents, encoding: .utf8)
    }
}
