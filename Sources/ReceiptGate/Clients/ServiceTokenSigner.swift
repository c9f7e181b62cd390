import Foundation
import OpenSSLCrypto
import ReceiptCore
import Synchronization

/// `TokenSigner` on the shared signing keys: signs with the current key (made on first use by
/// whichever process gets there first), verifies against every published key.
struct ServiceTokenSigner: TokenSigner {
    let keys: SigningKeyRepository
    let issuerURL: @Sendable () -> String
    let accessTokenLifetime: Duration
    private let cache = PrivateKeyCache()

    init(keys: SigningKeyRepository, issuer: @escaping @Sendable () -> String, accessTokenLifetime: Duration) {
        self.keys = keys
        self.issuerURL = issuer
        self.accessTokenLifetime = accessTokenLifetime
    }

    var issuer: String { issuerURL() }

    func sign(claims: Data) async throws -> String {
        let stored = try await keys.current()
        let key = try cache.key(stored.kid) { try keys.privateKey(stored) }
        return try CompactJWS.sign(payload: claims, header: JWSHeader(kid: stored.kid, typ: "JWT"), key: key)
    }

    func verifiedClaims(_ token: String) async throws -> Data? {
        guard token.utf8.count <= 4096, let jws = try? CompactJWS(parsing: token), let kid = jws.header.kid else {
            return nil
        }
        guard let stored = try await keys.published().first(where: { $0.kid == kid }),
            let jwk = try? JSONDecoder().decode(PublicJWK.self, from: Data(stored.publicJWK.utf8)),
            let x = Base64.urlDecode(jwk.x), let y = Base64.urlDecode(jwk.y),
            let publicKey = try? PublicKey(p256X: x, y: y)
        else { return nil }
        return jws.isValidSignature(using: publicKey, allowedAlgorithms: ["ES256"]) ? jws.payload : nil
    }

    func jwks() async throws -> Data {
        let keys = try await keys.published().map(\.publicJWK)
        return Data(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8)
    }

    struct PublicJWK: Decodable { let x: String; let y: String }
}

/// Opened private keys by kid, so a PEM is parsed once per process, not per token.
private final class PrivateKeyCache: Sendable {
    private let keys = Mutex<[String: PrivateKey]>([:])

    func key(_ kid: String, open: () throws -> PrivateKey) throws -> PrivateKey {
        if let key = keys.withLock({ $0[kid] }) { return key }
        let key = try open()
        keys.withLock { $0[kid] = key }
        return key
    }
}
