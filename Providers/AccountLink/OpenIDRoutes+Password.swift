import Foundation
import OpenSSLCrypto
import ReceiptCore

extension OpenIDRoutes {
    /// The password grant. Guessing is limited per name tried (username or e-mail, whether or not
    /// it exists, across every address and process) on top of the route's per-address limit, and
    /// an unknown name costs the same scrypt as a known one, so answers and timing do not tell
    /// which accounts exist.
    func password(_ parameters: [String: String]) async throws -> RouteResponse {
        guard let clientID = parameters["client_id"], !clientID.isEmpty else {
            return Self.oauthError("invalid_request", "client_id is required")
        }
        guard let username = parameters["username"], !username.isEmpty, username.utf8.count <= 254,
            let password = parameters["password"], !password.isEmpty, password.utf8.count <= 256
        else {
            return Self.oauthError("invalid_request", "username and password are required")
        }
        // Names are printable ASCII (generated usernames, addresses this dialect accepted): one
        // spelling, one counter, compared the same way here and in Postgres.
        guard username.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            return Self.oauthError("invalid_request", "username must be printable ASCII")
        }
        guard let client = try await core.client(id: clientID) else {
            return Self.oauthError("invalid_client", "unknown client", status: 401)
        }
        let limitKey =
            "\(client.scope)|\(String(decoding: username.utf8.map { (0x41...0x5a).contains($0) ? $0 + 32 : $0 }, as: UTF8.self))"
        // Every attempt is counted before the password is checked, so a burst cannot slip past the
        // limit; a success takes its count back.
        do {
            try await core.checkRateLimit(AccountLink.Limits.passwordFailuresPerName, key: limitKey)
        } catch let refusal as RouteRefusal {
            return Self.tooManyAttempts(
                retryAfter: refusal.retryAfter
                    ?? Int(AccountLink.Limits.passwordFailuresPerName.window.components.seconds))
        }
        var account = try await core.accounts.account(username: username, scope: client.scope)
        if account == nil, username.contains("@"),
            let byEmail = try await core.accounts.account(email: username, scope: client.scope), byEmail.emailVerified
        {
            account = byEmail
        }
        // Every name costs one scrypt: a missing account or password checks against a dummy hash.
        let hash = account?.passwordHash ?? Self.dummyHash
        let matches = await checkPassword(password, hash)
        guard let account, account.passwordHash != nil, matches else {
            return Self.oauthError("invalid_grant", "wrong username or password")
        }
        try await core.forgiveRateLimitHit(AccountLink.Limits.passwordFailuresPerName, key: limitKey)
        let pair = try await tokens.issue(account: account, clientID: client.clientID)
        return .json(
            TokenAnswer(
                access_token: pair.accessToken, expires_in: pair.expiresIn, refresh_token: pair.refreshToken,
                app_account_token: account.appAccountToken),
            headers: [("Cache-Control", "no-store"), ("Pragma", "no-cache")])
    }

    static func tooManyAttempts(retryAfter: Int) -> RouteResponse {
        var response = Problem(.rateLimited, "too many failed sign-ins for this name; retry after \(retryAfter) s")
            .response
        response.headers.append(("Retry-After", String(retryAfter)))
        return response
    }

    /// A hash of a random password no one knows, made once with the real parameters.
    static let dummyHash: String =
        (try? Scrypt.hashPassword(Base64.urlEncode(SecureRandom.bytes(24)))) ?? "scrypt$invalid"
}
