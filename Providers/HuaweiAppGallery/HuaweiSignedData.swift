import Foundation
package import OpenSSLCrypto

/// The app's IAP public key (AppGallery Connect, In-App Purchases settings): base64 DER
/// SubjectPublicKeyInfo of an RSA key of at least 2048 bits. Every purchase Huawei returns and
/// every subscription notification is signed with its private half.
package struct HuaweiIAPKey: Sendable {
    package let key: PublicKey

    package struct Invalid: Error, CustomStringConvertible {
        package let description: String
    }

    package init(base64 text: String) throws(Invalid) {
        guard let der = Base64.decodeLenient(text) else { throw Invalid(description: "is not base64") }
        guard let key = try? PublicKey(subjectPublicKeyInfo: der), key.isRSA else {
            throw Invalid(description: "is not a DER SubjectPublicKeyInfo of an RSA key")
        }
        guard let bits = Self.modulusBits(der), bits >= 2048 else {
            throw Invalid(description: "is an RSA key shorter than 2048 bits")
        }
        self.key = key
    }

    /// The modulus length of an RSA SubjectPublicKeyInfo: SEQUENCE { AlgorithmIdentifier,
    /// BIT STRING { 0, SEQUENCE { INTEGER n, INTEGER e } } }. OpenSSL has already parsed the key;
    /// this only walks it to count n's bits.
    static func modulusBits(_ der: Data) -> Int? {
        var reader = DERReader(bytes: [UInt8](der))
        guard var spki = reader.element(tag: 0x30), spki.element(tag: 0x30) != nil,
            var bitString = spki.element(tag: 0x03),
            bitString.byte() == 0, var rsaKey = bitString.element(tag: 0x30),
            let modulus = rsaKey.element(tag: 0x02)?.rest
        else { return nil }
        let significant = modulus.drop { $0 == 0 }
        guard let top = significant.first else { return nil }
        return (significant.count - 1) * 8 + (8 - top.leadingZeroBitCount)
    }

    /// Whether `signature` (base64) signs `data`'s bytes, with the algorithm Huawei named beside
    /// it: `SHA256WithRSA/PSS` (RSASSA-PSS), or `SHA256WithRSA` / none (PKCS#1 v1.5). Any other
    /// algorithm name is not a signature we can check, so it fails.
    package func isValid(signature: String?, for data: String, algorithm: String?) -> Bool {
        guard let signature, let raw = Base64.decodeLenient(signature), !raw.isEmpty else { return false }
        let bytes = Data(data.utf8)
        switch algorithm?.trimmingCharacters(in: .whitespaces).uppercased() {
        case "SHA256WITHRSA/PSS"?: return key.isValidPS256(signature: raw, for: bytes)
        case nil, ""?, "SHA256WITHRSA"?: return key.isValidRS256(signature: raw, for: bytes)
        default: return false
        }
    }
}

/// Just enough DER reading to find an RSA modulus.
private struct DERReader {
    var bytes: ArraySlice<UInt8>
    init(bytes: [UInt8]) { self.bytes = bytes[...] }
    init(slice: ArraySlice<UInt8>) { bytes = slice }

    var rest: ArraySlice<UInt8> { bytes }

    mutating func byte() -> UInt8? { bytes.popFirst() }

    mutating func element(tag: UInt8) -> DERReader? {
        guard bytes.popFirst() == tag, let first = bytes.popFirst() else { return nil }
        var length = Int(first)
        if first & 0x80 != 0 {
            let count = Int(first & 0x7f)
            guard (1...4).contains(count), bytes.count >= count else { return nil }
            length = bytes.prefix(count).reduce(0) { $0 << 8 | Int($1) }
            bytes = bytes.dropFirst(count)
        }
        guard bytes.count >= length else { return nil }
        let content = bytes.prefix(length)
        bytes = bytes.dropFirst(length)
        return DERReader(slice: content)
    }
}
