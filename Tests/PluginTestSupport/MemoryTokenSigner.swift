package import Foundation
import OpenSSLCrypto
import ReceiptCore

/// `TokenSigner` in memory: one P-256 key made at init, `rotate()` adds another (the old one
/// stays published), for plugin tests of dialects that issue JWTs.
package final class MemoryTokenSigner: TokenSigner, @unchecked Sendable {
    private let lock = NSLock()
    private var keys: [(kid: String, key: PrivateKey)] = []
    package let issuer: String
    package let accessTokenLifetime: Duration

    package init(issuer: String = "https://issuer.example.test", accessTokenLifetime: Duration = .seconds(900)) {
        self.issuer = issuer
        self.accessTokenLifetime = accessTokenLifetime
        rotate()
    }

    /// A new current key; earlier ones stay published.
    package func rotate() {
        guard let key = try? PrivateKey.generateP256() else { return }
        lock.withLock { keys.insert(("mem-\(keys.count + 1)", key), at: 0) }
    }

    package var currentKid: String { lock.withLock { keys.first?.kid ?? "" } }

    package func sign(claims: Data) async throws -> String {
        guard let (kid, key) = lock.withLock({ keys.first }) else { throw UnavailableTokenSigner.Unavailable() }
        return try CompactJWS.sign(payload: claims, header: JWSHeader(kid: kid, typ: "JWT"), key: key)
    }

    package func verifiedClaims(_ token: String) async throws -> Data? {
        guard let jws = try? CompactJWS(parsing: token), let kid = jws.header.kid,
            let key = lock.withLock({ keys.first { $0.kid == kid }?.key }), let publicKey = try? key.publicKey
        else { return nil }
        return jws.isValidSignature(using: publicKey) ? jws.payload : nil
    }

    package func jwks() async throws -> Data {
        let kids = lock.withLock { keys.map(\.kid) }
        return Data(#"{"keys":[\#(kids.map { #"{"kid":"\#($0)","kty":"EC"}"# }.joined(separator: ","))]}"#.utf8)
    }
}
