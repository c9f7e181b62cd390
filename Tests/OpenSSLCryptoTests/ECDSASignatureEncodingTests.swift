import Foundation
import TestSupport
import Testing

@testable import OpenSSLCrypto

/// JOSE's raw `r || s` is turned into DER by hand on every verification; OpenSSL's own DER
/// (what `signECDSASHA256DER` returns) is the reference it must reproduce byte for byte.
@Suite struct ECDSASignatureEncoding {
    @Test func rawToDERReproducesOpenSSLsEncodingAndVerifies() async throws {
        try await offThePool {
            let key = try PrivateKey.generateP256()
            var leadingZero = 0, highBit = 0
            for index in 0..<2_000 {
                let message = Data("message \(index)".utf8)
                let der = try key.signECDSASHA256DER(message)
                let raw = try ECDSASignature.derToRaw(der, coordinateSize: 32)
                #expect(try ECDSASignature.rawToDER(raw, coordinateSize: 32) == der)
                #expect(try key.publicKey.isValidES256(signature: raw, for: message))
                if raw[0] == 0 || raw[32] == 0 { leadingZero += 1 }
                if raw[0] & 0x80 != 0 || raw[32] & 0x80 != 0 { highBit += 1 }
            }
            // Both special cases of the INTEGER encoding were exercised (a leading zero byte is missed in 2,000 signatures with probability e^-15).
            #expect(highBit > 0)
            #expect(leadingZero > 0)
        }
    }

    @Test func edgeValuesEncodeMinimally() throws {
        let zero = Data(count: 64)
        #expect(
            try ECDSASignature.rawToDER(zero, coordinateSize: 32)
                == Data([0x30, 0x06, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00]))
        let top = Data(repeating: 0xff, count: 64)
        let der = try ECDSASignature.rawToDER(top, coordinateSize: 32)
        #expect(der.count == 2 + 2 * 35 && der[3] == 33 && der[4] == 0x00)
        #expect(try ECDSASignature.derToRaw(der, coordinateSize: 32) == top)
        #expect(throws: CryptoError.self) { try ECDSASignature.rawToDER(Data(count: 63), coordinateSize: 32) }
    }
}
