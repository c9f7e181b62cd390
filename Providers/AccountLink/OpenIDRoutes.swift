import Foundation
import OpenSSLCrypto
import ReceiptCore

/// What an OpenID Connect relying party expects: discovery, the key set, the token endpoint
/// (refresh with rotation and reuse detection; password), and userinfo with entitlements.
struct OpenIDRoutes: Sendable {
    let core: any DialectCore
    let tokens: AccessTokens
    let checkPassword: @Sendable (_ password: String, _ hash: String) async -> Bool

    func discovery() async -> RouteResponse {
        let issuer = core.signer.issuer
        let document: [String: AnyEncodable] = [
            "issuer": .string(issuer),
            "jwks_uri": .string("\(issuer)/.well-known/jwks.json"),
            "token_endpoint": .string("\(issuer)/oauth/token"),
            "userinfo_endpoint": .string("\(issuer)/userinfo"),
            "response_types_supported": .strings(["token"]),
            "subject_types_supported": .strings(["public"]),
            "id_token_signing_alg_values_supported": .strings(["ES256"]),
            "grant_types_supported": .strings(["refresh_token", "password"]),
            "token_endpoint_auth_methods_supported": .strings(["none"]),
            "claims_supported": .strings([
                "iss", "sub", "aud", "exp", "iat", "auth_time", "email", "email_verified", "preferred_username",
            ]),
        ]
        return .json(document, headers: [("Cache-Control", "public, max-age=300")])
    }

    func jwks(context: RouteContext) async -> RouteResponse {
        do {
            return RouteResponse(
                status: 200, headers: [("Cache-Control", "public, max-age=300")],
                contentType: "application/jwk-set+json",
                body: try await core.signer.jwks())
        } catch {
            context.logger.error("jwks unavailable", ["error": "\(error)"])
            return Problem(.verifierError, "the key set is unavailable; retry").response
        }
    }

    /// RFC 6749 §5.2 errors.
    static func oauthError(_ error: String, _ description: String, status: Int = 400) -> RouteResponse {
        var headers: [(name: String, value: String)] = [("Cache-Control", "no-store"), ("Pragma", "no-cache")]
        if status == 401 { headers.append(("WWW-Authenticate", #"Basic realm="receiptgate""#)) }
        return .json(["error": error, "error_description": description], status: status, headers: headers)
    }

    struct TokenAnswer: Encodable {
        let access_token: String
        let token_type = "Bearer"
        let expires_in: Int
        let refresh_token: String
        /// The UUID the app sets as the App Store's `appAccountToken` when this account buys.
        let app_account_token: String
    }

    func token(_ request: RouteRequest, context: RouteContext) async -> RouteResponse {
        guard let parameters = FormBody.parameters(request) else {
            return Self.oauthError(
                "invalid_request", "the body must be application/x-www-form-urlencoded (or a JSON object of strings)")
        }
        do {
            switch parameters["grant_type"] {
            case nil: return Self.oauthError("invalid_request", "grant_type is required")
            case "refresh_token": return try await refresh(parameters)
            case "password": return try await password(parameters)
            default: return Self.oauthError("unsupported_grant_type", "grant_type must be refresh_token or password")
            }
        } catch {
            context.logger.error("token endpoint failed", ["error": "\(error)"])
            return Self.oauthError("temporarily_unavailable", "try again", status: 503)
        }
    }

    private func refresh(_ parameters: [String: String]) async throws -> RouteResponse {
        guard let presented = parameters["refresh_token"], !presented.isEmpty, presented.utf8.count <= 512 else {
            return Self.oauthError("invalid_request", "refresh_token is required")
        }
        switch try await core.tokens.rotate(
            presented, kind: AccountLink.Kind.refresh, lifetime: AccountLink.refreshTokenLifetime)
        {
        case .invalid:
            return Self.oauthError("invalid_grant", "the refresh token is unknown, expired or revoked")
        case .reused:
            return Self.oauthError(
                "invalid_grant", "the refresh token was already used; every token of its sign-in is now revoked")
        case .rotated(let successor):
            let stored = successor.stored
            if let clientID = parameters["client_id"], clientID != stored.clientID {
                try await core.tokens.revokeFamily(stored.family)
                return Self.oauthError("invalid_grant", "the refresh token was issued to another client")
            }
            guard let accountID = stored.accountID, let account = try await core.accounts.account(id: accountID),
                try await core.client(id: stored.clientID) != nil
            else {
                return Self.oauthError("invalid_grant", "the account or client no longer exists")
            }
            let authTime = stored.payload.flatMap { Int64($0) } ?? Int64(core.now().timeIntervalSince1970)
            let (access, expiresIn) = try await tokens.access(
                account: account, clientID: stored.clientID, authTime: authTime)
            return .json(
                TokenAnswer(
                    access_token: access, expires_in: expiresIn, refresh_token: successor.token,
                    app_account_token: account.appAccountToken),
                headers: [("Cache-Control", "no-store"), ("Pragma", "no-cache")])
        }
    }

    struct Entitlement: Encodable {
        let store: String
        let original_transaction_id: String
        let product_id: String?
        let state: String
        let expires_date: String?
    }

    struct UserInfo: Encodable {
        let sub: String
        let email: String?
        let email_verified: Bool
        let preferred_username: String
        let app_account_token: String
        let entitlements: [Entitlement]
    }

    func userinfo(_ request: RouteRequest, context: RouteContext) async -> RouteResponse {
        do {
            guard let bearer = try await tokens.verify(authorization: request.headers["authorization"]) else {
                return Problem(.unauthorized, "a valid bearer access token is required").response
            }
            var entitlements: [Entitlement] = []
            for key in try await core.accounts.links(accountID: bearer.account.id) {
                if let entitlement = try await entitlement(key, client: bearer.client) {
                    entitlements.append(entitlement)
                }
            }
            let account = bearer.account
            return .json(
                UserInfo(
                    sub: account.id, email: account.email,
                    email_verified: account.emailVerified && account.email != nil,
                    preferred_username: account.username, app_account_token: account.appAccountToken,
                    entitlements: entitlements), headers: [("Cache-Control", "no-store")])
        } catch {
            context.logger.error("userinfo failed", ["error": "\(error)"])
            return Problem(.verifierError, "try again").response
        }
    }

    /// What the ledger says of a linked purchase now; nil when it entitles to nothing (refunded,
    /// revoked, expired) or the ledger does not know it.
    private func entitlement(_ key: PurchaseKey, client: ClientInfo) async throws -> Entitlement? {
        let formatter = ISO8601DateFormatter()
        if let subscription = try await core.subscription(
            store: key.store, originalTransactionID: key.originalTransactionID, client: client)
        {
            guard subscription.status == .active || subscription.status == .gracePeriod else { return nil }
            return Entitlement(
                store: key.store.rawValue, original_transaction_id: key.originalTransactionID,
                product_id: subscription.productID,
                state: subscription.status.rawValue, expires_date: subscription.expiresDate.map(formatter.string))
        }
        guard
            let transaction = try await core.transaction(
                store: key.store, transactionID: key.originalTransactionID, client: client),
            transaction.state == .active
        else { return nil }
        return Entitlement(
            store: key.store.rawValue, original_transaction_id: key.originalTransactionID,
            product_id: transaction.productID,
            state: transaction.state.rawValue, expires_date: transaction.expiresDate.map(formatter.string))
    }
}

/// The few JSON shapes the discovery document holds.
enum AnyEncodable: Encodable {
    case string(String)
    case strings([String])

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let value): try container.encode(value)
        case .strings(let value): try container.encode(value)
        }
    }
}
