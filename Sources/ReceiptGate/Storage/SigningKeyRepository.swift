import Foundation
import OpenSSLCrypto
import Postgres

/// The keys that sign access tokens (one current, some retired but still published). Private
/// keys are stored sealed under the master key, bound to their `kid`.
package struct SigningKeyRepository: Sendable {
    let pool: PostgresPool
    let secrets: SecretBox

    package init(database: Database, secrets: SecretBox) {
        self.init(pool: database.pool, secrets: secrets)
    }

    init(pool: PostgresPool, secrets: SecretBox) {
        self.pool = pool
        self.secrets = secrets
    }

    struct StoredKey: Sendable {
        let kid: String
        let sealedPrivateKey: Data
        let publicJWK: String
    }

    /// The current key, created if there is none (the unique index lets one process win).
    func current() async throws -> StoredKey {
        if let key = try await currentIfAny() { return key }
        let key = try Self.generate(secrets: secrets)
        try await pool.execute(
            """
            INSERT INTO signing_keys (kid, private_key_ciphertext, public_jwk) VALUES (\(key.kid), \(key.sealedPrivateKey), \(key.publicJWK)::jsonb)
            ON CONFLICT DO NOTHING
            """)
        guard let winner = try await currentIfAny() else {
            throw PostgresError(.queryFailed, "no current signing key after insert")
        }
        return winner
    }

    private func currentIfAny() async throws -> StoredKey? {
        try await pool.query(
            """
            SELECT kid, private_key_ciphertext, public_jwk::text AS jwk FROM signing_keys WHERE retired_at IS NULL
            """
        ).first.map(Self.decode)
    }

    /// Every key whose tokens may still be alive, current first.
    func published() async throws -> [StoredKey] {
        try await pool.query(
            """
            SELECT kid, private_key_ciphertext, public_jwk::text AS jwk FROM signing_keys
            WHERE retired_at IS NULL OR published_until > clock_timestamp()
            ORDER BY retired_at IS NULL DESC, created_at DESC
            """
        ).map(Self.decode)
    }

    /// Retires the current key (published for `keepPublished` more) and makes a new one current,
    /// in one transaction. Returns the new kid and the retired one.
    package func rotate(keepPublished: Duration) async throws -> (current: String, retired: String?) {
        let key = try Self.generate(secrets: secrets)
        let seconds = Double(keepPublished.components.seconds) + 60  // a minute for clock skew
        return try await pool.withTransaction { connection in
            let retired = try connection.query(
                """
                UPDATE signing_keys SET retired_at = clock_timestamp(), published_until = clock_timestamp() + make_interval(secs => \(seconds))
                WHERE retired_at IS NULL RETURNING kid
                """
            ).first.map { try $0.decode("kid", as: String.self) }
            _ = try connection.execute(
                """
                INSERT INTO signing_keys (kid, private_key_ciphertext, public_jwk) VALUES (\(key.kid), \(key.sealedPrivateKey), \(key.publicJWK)::jsonb)
                """)
            return (key.kid, retired)
        }
    }

    func privateKey(_ key: StoredKey) throws -> PrivateKey {
        try PrivateKey(pem: try secrets.open(key.sealedPrivateKey, owner: "signing-key:\(key.kid)"))
    }

    static func generate(secrets: SecretBox) throws -> StoredKey {
        let key = try PrivateKey.generateP256()
        let spki = try key.publicKey.subjectPublicKeyInfo()
        // A P-256 SubjectPublicKeyInfo ends with the uncompressed point 04 || X || Y.
        guard spki.count >= 65, spki[spki.endIndex - 65] == 0x04 else {
            throw PostgresError(.queryFailed, "unexpected P-256 key encoding")
        }
        let x = spki[(spki.endIndex - 64)..<(spki.endIndex - 32)], y = spki[(spki.endIndex - 32)...]
        // RFC 7638 thumbprint as the kid: stable, and says nothing but the key.
        let thumbprintInput = #"{"crv":"P-256","kty":"EC","x":"\#(Base64.urlEncode(x))","y":"\#(Base64.urlEncode(y))"}"#
        let kid = Base64.urlEncode(try SHA256.hash(Data(thumbprintInput.utf8)))
        let jwk =
            #"{"alg":"ES256","crv":"P-256","kid":"\#(kid)","kty":"EC","use":"sig","x":"\#(Base64.urlEncode(x))","y":"\#(Base64.urlEncode(y))"}"#
        return StoredKey(
            kid: kid, sealedPrivateKey: try secrets.seal(try key.pemRepresentation(), owner: "signing-key:\(kid)"),
            publicJWK: jwk)
    }

    static func decode(_ row: PostgresRow) throws -> StoredKey {
        StoredKey(
            kid: try row.decode("kid"), sealedPrivateKey: try row.decode("private_key_ciphertext", as: Data.self),
            publicJWK: try row.decode("jwk"))
    }
}
