import COpenSSL
import Foundation

/// Conversions between JOSE's raw `r || s` ECDSA signatures (RFC 7518 §3.4) and the DER
/// `ECDSA-Sig-Value` that OpenSSL produces and consumes.
enum ECDSASignature {
    static func rawToDER(_ raw: Data, coordinateSize: Int) throws -> Data {
        guard raw.count == 2 * coordinateSize else {
            throw CryptoError(.invalidSignature, "ECDSA signature must be \(2 * coordinateSize) bytes, got \(raw.count)")
        }
        guard let signature = ECDSA_SIG_new() else { throw openSSLError("ECDSA_SIG_new") }
        defer { ECDSA_SIG_free(signature) }
        let bytes = [UInt8](raw)
        guard let r = BN_bin2bn(bytes, Int32(coordinateSize), nil) else { throw openSSLError("BN_bin2bn") }
        guard let s = bytes.withUnsafeBufferPointer({ BN_bin2bn($0.baseAddress! + coordinateSize, Int32(coordinateSize), nil) }) else {
            BN_free(r)
            throw openSSLError("BN_bin2bn")
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {  // takes ownership of r and s on success
            BN_free(r)
            BN_free(s)
            throw openSSLError("ECDSA_SIG_set0")
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { throw openSSLError("i2d_ECDSA_SIG") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { out -> Int32 in
            var cursor = out.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        guard written == length else { throw openSSLError("i2d_ECDSA_SIG") }
        return Data(der)
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
        let okR = out.withUnsafeMutableBufferPointer { BN_bn2binpad(ECDSA_SIG_get0_r(parsed), $0.baseAddress, Int32(coordinateSize)) }
        let okS = out.withUnsafeMutableBufferPointer {
            BN_bn2binpad(ECDSA_SIG_get0_s(parsed), $0.baseAddress! + coordinateSize, Int32(coordinateSize))
        }
        guard okR == Int32(coordinateSize), okS == Int32(coordinateSize) else { throw openSSLError("BN_bn2binpad") }
        return Data(out)
    }
}
