import Foundation
import Testing

@testable import OpenSSLCrypto

/// OpenSSL failing in a digest is an error the caller sees, with OpenSSL's own reason: never a
/// crash of the process (as it once was), never an empty or made-up digest.
@Suite struct DigestFailures {
    @Test func aDigestOpenSSLDoesNotHaveThrowsItsReason() throws {
        let missing = DigestMethod("NO-SUCH-DIGEST-256")
        #expect(missing.method == nil)
        do {
            _ = try missing.hash(Data("abc".utf8))
            Issue.record("hashed with a digest OpenSSL does not have")
        } catch let error as CryptoError {
            #expect(error.code == .openSSLFailure)
            // ERR_get_error()'s text names the failing fetch ("unsupported" in OpenSSL 3's words).
            #expect(error.message.contains("NO-SUCH-DIGEST-256"))
            #expect(error.message.lowercased().contains("unsupported"), "\(error.message)")
        }
    }

    /// The same code path serves SHA-256 and other names: a real one answers its published value.
    @Test func aDigestOpenSSLHasAnswersThroughTheSamePath() throws {
        #expect(
            Hex.encode(try DigestMethod("SHA384").hash(Data("abc".utf8)))
                == "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7")
        #expect(try SHA256.hex(Data("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
