package import Foundation
package import OpenSSLCrypto

/// Keys and certificates no honest builder makes, for tests of the code that must refuse them.
package enum CertificateSurgery {
    /// A P-256 SubjectPublicKeyInfo whose point is the single byte 00, SEC 1's encoding of the
    /// point at infinity (for which anyone can make a signature that verifies).
    package static let p256PointAtInfinity = Data([
        0x30, 0x19, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
        0xce, 0x3d,
        0x03, 0x01, 0x07, 0x03, 0x02, 0x00, 0x00,
    ])

    /// A P-256 SubjectPublicKeyInfo of an uncompressed point (x, y) taken as given, on the curve or not.
    package static func p256SubjectPublicKeyInfo(x: Data, y: Data) -> Data {
        Data([
            0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48,
            0xce, 0x3d,
            0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
        ]) + x + y
    }

    /// A JOSE ES256 signature (r ‖ s) that verifies for the point at infinity Q over any message
    /// whose SHA-256 e is below the group order: with s = e and r = x(G), u1 = e·s⁻¹ = 1 and
    /// u1·G + u2·Q = G. nil for the rare message whose digest is not below the order.
    package static func signatureForPointAtInfinity(over message: Data) throws -> Data? {
        let e = try SHA256.hash(message)
        guard !e.allSatisfy({ $0 == 0 }), e.lexicographicallyPrecedes(p256Order) else { return nil }
        return p256GeneratorX + e
    }

    static let p256Order = Data([
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
    ])
    static let p256GeneratorX = Data([
        0x6b, 0x17, 0xd1, 0xf2, 0xe1, 0x2c, 0x42, 0x47, 0xf8, 0xbc, 0xe6, 0xe5, 0x63, 0xa4, 0x40, 0xf2,
        0x77, 0x03, 0x7d, 0x81, 0x2d, 0xeb, 0x33, 0xa0, 0xf4, 0xa1, 0x39, 0x45, 0xd8, 0x98, 0xc2, 0x96,
    ])

    /// `certificate` with its SubjectPublicKeyInfo replaced by `subjectPublicKeyInfo` and signed
    /// again (ECDSA with SHA-256) by `issuerKey`, so its chain still verifies and only the key is wrong.
    package static func replacingKey(
        of certificate: Certificate, with subjectPublicKeyInfo: Data, issuerKey: PrivateKey
    ) throws -> Certificate {
        let der = [UInt8](certificate.derEncoded)
        let outer = try Element(der, at: 0)
        let tbs = try Element(der, at: outer.contentStart)
        let algorithm = try Element(der, at: tbs.end)
        // TBSCertificate: [0] version, serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo, extensions.
        var fields: [Data] = []
        var offset = tbs.contentStart
        while offset < tbs.end {
            let field = try Element(der, at: offset)
            fields.append(Data(der[offset..<field.end]))
            offset = field.end
        }
        guard fields.count > 6, fields[0].first == 0xa0 else { throw Malformed() }
        fields[6] = subjectPublicKeyInfo
        let newTBS = wrap(0x30, fields.reduce(Data(), +))
        let signature = try issuerKey.signECDSASHA256DER(newTBS)
        return try Certificate(
            derEncoded: wrap(0x30, newTBS + Data(der[tbs.end..<algorithm.end]) + wrap(0x03, Data([0]) + signature)))
    }

    struct Malformed: Error {}

    /// One DER element's bounds (single-byte tags, definite lengths: all a certificate uses).
    struct Element {
        let contentStart: Int
        let end: Int

        init(_ der: [UInt8], at start: Int) throws {
            guard start + 2 <= der.count else { throw Malformed() }
            let first = Int(der[start + 1])
            var length = first, header = 2
            if first >= 0x80 {
                let count = first & 0x7f
                guard count >= 1, count <= 4, start + 2 + count <= der.count else { throw Malformed() }
                length = der[(start + 2)..<(start + 2 + count)].reduce(0) { $0 << 8 | Int($1) }
                header += count
            }
            contentStart = start + header
            end = contentStart + length
            guard end <= der.count else { throw Malformed() }
        }
    }

    static func wrap(_ tag: UInt8, _ content: Data) -> Data {
        var length: [UInt8] = []
        var value = content.count
        if value < 0x80 {
            length = [UInt8(value)]
        } else {
            while value > 0 { length.insert(UInt8(value & 0xff), at: 0); value >>= 8 }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return Data([tag] + length) + content
    }
}
