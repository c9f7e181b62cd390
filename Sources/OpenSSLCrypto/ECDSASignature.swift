import COpenSSL
import Foundation

/// Conversions between JOSE's raw `r || s` ECDSA signatures (RFC 7518 §3.4) and the DER
/// `ECDSA-Sig-Value` that OpenSSL produces and consumes.
enum ECDSASignature {
    /// DER written directly (two minimal INTEGERs in a SEQUENCE, X.690 §8.3): it runs once per
    /// verified token, and going through OpenSSL's bignums cost more than the encoding.
    static func rawToDER(_ raw: Data, coordinateSize: Int) throws -> Data {
        guard raw.count == 2 * coordinateSize else {
            throw CryptoError(
                .invalidSignature, "ECDSA signature must be \(2 * coordinateSize) bytes, got \(raw.count)")
        }
        let bytes = [UInt8](raw)
        let r = derInteger(bytes[0..<coordinateSize]), s = derInteger(bytes[coordinateSize...])
        var der: [UInt8] = [0x30]
        der += derLength(r.count + s.count)
        der += r
        der += s
        return Data(der)
    }

    /// An unsigned big-endian integer as a DER INTEGER: no leading zero bytes, except one when
    /// the top bit is set (it would read as negative); zero is one 0x00.
    private static func derInteger(_ magnitude: ArraySlice<UInt8>) -> [UInt8] {
        var content = Array(magnitude.drop { $0 == 0 })
        if content.isEmpty || content[0] & 0x80 != 0 { content.insert(0, at: 0) }
        return [0x02] + derLength(content.count) + content
    }

    private static func derLength(_ length: Int) -> [UInt8] {
        length < 0x80 ? [UInt8(length)] : [0x81, UInt8(length)]  // at most 2 × 67 bytes here
    }

    static func derToRaw(_ der: Data, coordinateSize: Int) throws -> Data {
        let parsed = der.withUnsafeBytes { raw -> OpaquePointer? in
            guard let base = raw.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
            var cursor: UnsafePointer<UInt8>? = base
            return d2i_ECDSA_SIG(nil, &cursor, raw.count)
        }
        guard let parsed else { throw openSSLError(.invalidSignature, "d2i_ECDSA_SIG") }
        defer { ECDSA_SIG_free(parsed) }
        var out = [UInt8](repeating: 0, count: 2 * coordinateSize)
        let okR = out.withUnsafeMutableBufferPointer {
            BN_bn2binpad(ECDSA_SIG_get0_r(parsed), $0.baseAddress, Int32(coordinateSize))
        }
        let okS = out.withUnsafeMutableBufferPointer {
            BN_bn2binpad(ECDSA_SIG_get0_s(parsed), $0.baseAddress! + coordinateSize, Int32(coordinateSize))
        }
        guard okR == Int32(coordinateSize), okS == Int32(coordinateSize) else { throw openSSLError("BN_bn2binpad") }
        return Data(out)
    }
}
