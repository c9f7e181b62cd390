import Foundation
import ReceiptCore

/// OpenID access tokens (ES256 JWTs from the core's signer) and refresh tokens (opaque, in the
/// core's token store, rotated on every use).
struct AccessTokens: Sendable {
    let core: any DialectCore

    struct Claims: Codable, Sendable {
        let iss: String
        let sub: String
        let aud: String
        let exp: Int64
        let iat: Int64
        let auth_time: Int64
    }

    /// What a verified access token says.
    struct Bearer: Sendable {
        let account: AccountRecord
        let client: ClientInfo
        let claims: Claims
    }

    /// The pair handed to the app.
    struct Pair: Sendable {
        let accessToken: String
        let refreshToken: String
        let expiresIn: Int
    }

    func access(account: AccountRecord, clientID: String, authTime: Int64) async throws -> (String, Int) {
        let now = Int64(core.now().timeIntervalSince1970)
        let lifetime = Int64(core.signer.accessTokenLifetime.components.seconds)
        let claims = Claims(
            iss: core.signer.issuer, sub: account.id, aud: clientID, exp: now + lifetime, iat: now, auth_time: authTime)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try await core.signer.sign(claims: try encoder.encode(claims)), Int(lifetime))
    }

    /// A new access token and a new refresh-token family (a fresh sign-in).
    func issue(account: AccountRecord, clientID: String) async throws -> Pair {
        let authTime = Int64(core.now().timeIntervalSince1970)
        let (access, expiresIn) = try await access(account: account, clientID: clientID, authTime: authTime)
        let refresh = try await core.tokens.issue(
            TokenRequest(
                kind: AccountLink.Kind.refresh, clientID: clientID, accountID: account.id,
                lifetime: AccountLink.refreshTokenLifetime, payload: String(authTime)))
        return Pair(accessToken: access, refreshToken: refresh.token, expiresIn: expiresIn)
    }

    /// The account and client an `Authorization: Bearer <JWT>` header names, or nil when the
    /// token is not ours, expired, for a disabled client, or for an account that is gone.
    func verify(authorization header: String?) async throws -> Bearer? {
        guard let token = Self.bearer(header) else { return nil }
        guard let payload = try await core.signer.verifiedClaims(token),
            let claims = try? JSONDecoder().decode(Claims.self, from: payload)
        else { return nil }
        let now = Int64(core.now().timeIntervalSince1970)
        guard claims.iss == core.signer.issuer, claims.exp > now, claims.iat <= now + 60,
            let client = try await core.client(id: claims.aud),
            let account = try await core.accounts.account(id: claims.sub), account.scope == client.scope
        else { return nil }
        return Bearer(account: account, client: client, claims: claims)
    }

    static func bearer(_ header: String?) -> String? {
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty || token.utf8.count > 4096 ? nil : token
    }
}
