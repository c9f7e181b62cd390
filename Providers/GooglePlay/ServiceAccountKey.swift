package import Foundation
import OpenSSLCrypto

/// A Google service-account key: the JSON file Google Cloud hands out. Only what the token
/// exchange needs is kept; the private key never appears in a description or a log.
package struct ServiceAccountKey: Sendable, CustomStringConvertible {
    package let clientEmail: String
    package let privateKeyID: String?
    package let tokenURI: String
    let privateKey: PrivateKey
    /// Identifies the key in the token cache (never the key material itself).
    let cacheKey: String

    package struct Invalid: Error, CustomStringConvertible {
        package let problem: String
        package var description: String { problem }
    }

    /// Parses the key file's JSON. Throws `Invalid` naming what is wrong, never quoting the key.
    package init(json: Data) throws {
        struct File: Decodable {
            let type: String?
            let client_email: String?
            let private_key: String?
            let private_key_id: String?
            let token_uri: String?
        }
        guard let file = try? JSONDecoder().decode(File.self, from: json) else {
            throw Invalid(problem: "a service-account key must be the JSON file from Google Cloud")
        }
        if let type = file.type, type != "service_account" {
            throw Invalid(problem: "the key's type must be service_account, got \(type)")
        }
        guard let email = file.client_email, !email.isEmpty else {
            throw Invalid(problem: "the key has no client_email")
        }
        guard let pem = file.private_key, !pem.isEmpty else { throw Invalid(problem: "the key has no private_key") }
        let tokenURI = file.token_uri ?? "https://oauth2.googleapis.com/token"
        guard let url = URL(string: tokenURI), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host != nil
        else {
            throw Invalid(problem: "the key's token_uri must be an http(s) URL")
        }
        let key: PrivateKey
        do { key = try PrivateKey(pem: pem) } catch {
            throw Invalid(problem: "the key's private_key is not a PEM private key")
        }
        guard key.isRSA else { throw Invalid(problem: "the key's private_key must be an RSA key") }
        clientEmail = email
        privateKeyID = file.private_key_id
        self.tokenURI = tokenURI
        privateKey = key
        cacheKey = try "\(email)|\(file.private_key_id ?? "")|\(tokenURI)|\(SHA256.hex(Data(pem.utf8)).prefix(16))"
    }

    package init(contentsOfFile path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Invalid(problem: "cannot read \(path)")
        }
        try self.init(json: data)
    }

    package var description: String { "service account \(clientEmail)" }

    /// The RS256 JWT assertion of the OAuth 2.0 JWT bearer grant (RFC 7523), valid `lifetime`
    /// seconds (Google accepts at most an hour).
    func assertion(scope: String, now: Date, lifetime: TimeInterval = 3600) throws -> String {
        struct Claims: Encodable { let iss: String; let scope: String; let aud: String; let iat: Int64; let exp: Int64 }
        let issued = Int64(now.timeIntervalSince1970)
        let claims = Claims(
            iss: clientEmail, scope: scope, aud: tokenURI, iat: issued, exp: issued + Int64(min(lifetime, 3600)))
        return try CompactJWS.sign(claims: claims, header: JWSHeader(kid: privateKeyID, typ: "JWT"), key: privateKey)
    }
}
