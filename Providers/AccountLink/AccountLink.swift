import Foundation
import OpenSSLCrypto
public import ReceiptCore

/// The account-linking dialect: `POST /iap` turns a store receipt into an account (created,
/// linked or switched to) and OpenID Connect tokens; the OpenID endpoints a relying party needs;
/// and the e-mail links that finish a pending address or a first password. It keeps no state of
/// its own: accounts and links go through the core's record transaction, opaque tokens through
/// the token store, JWTs through the core's signer, mail through the outbox.
public struct AccountLink: DialectProvider {
    public let name = "account-link"

    /// Token kinds in the core's token store.
    public enum Kind {
        public static let refresh = "accountlink.refresh"
        package static let confirmEmail = "accountlink.confirm_email"
        package static let resetPassword = "accountlink.reset_password"
    }

    /// Defaults; each can be changed with `RECEIPTGATE_RATE_LIMITS` (`accountlink.iap.address=30/60s`).
    package enum Limits {
        package static let iapPerAddress = RateLimitPolicy(
            name: "accountlink.iap.address", key: .callerAddress, limit: 30, window: .seconds(60), shared: true)
        package static let iapPerPurchase = RateLimitPolicy(
            name: "accountlink.iap.purchase", key: .purchase, limit: 10, window: .seconds(60), shared: true)
        package static let tokenPerAddress = RateLimitPolicy(
            name: "accountlink.token.address", key: .callerAddress, limit: 30, window: .seconds(60), shared: true)
        /// Per process: apps call it often, and an unauthenticated flood should cost no database work.
        package static let userinfoPerAddress = RateLimitPolicy(
            name: "accountlink.userinfo.address", key: .callerAddress, limit: 120, window: .seconds(60),
            shared: false)
        package static let accountPagesPerAddress = RateLimitPolicy(
            name: "accountlink.account.address", key: .callerAddress, limit: 30, window: .seconds(60),
            shared: true)
        /// Failed password sign-ins per name tried (username or e-mail, existing or not), every address together.
        package static let passwordFailuresPerName = RateLimitPolicy(
            name: "accountlink.password.name", key: .handler, limit: 10, window: .seconds(900),
            shared: true)
        /// Mails one account can cause, and mails one address can receive: a purchase cannot make
        /// the service mail without bound, nor flood one inbox.
        package static let mailPerAccount = RateLimitPolicy(
            name: "accountlink.mail.account", key: .handler, limit: 3, window: .seconds(3600), shared: true)
        /// Bare transaction ids an account may have looked up with Apple: each costs the service's
        /// App Store Server API quota before anything else can refuse it.
        package static let lookupsPerAccount = RateLimitPolicy(
            name: "accountlink.lookup.account", key: .handler, limit: 20, window: .seconds(3600),
            shared: true)
        package static let mailPerRecipient = RateLimitPolicy(
            name: "accountlink.mail.recipient", key: .handler, limit: 3, window: .seconds(3600), shared: true)
    }

    package static let refreshTokenLifetime: Duration = .seconds(30 * 86_400)
    package static let emailLinkLifetime: Duration = .seconds(86_400)

    /// How a sign-in's password is checked against a stored scrypt hash: scrypt off the pool; a
    /// test watches which hash each sign-in checks.
    package var checkPassword: @Sendable (_ password: String, _ hash: String) async -> Bool = {
        await Scrypt.verifyPasswordOffThePool($0, hash: $1)
    }

    package init() {}

    public func routes(core: any DialectCore) -> [Route] {
        let tokens = AccessTokens(core: core)
        let iap = IAPHandler(core: core, tokens: tokens)
        let oauth = OpenIDRoutes(core: core, tokens: tokens, checkPassword: checkPassword)
        let pages = AccountPages(core: core)
        return [
            Route("POST", "/iap", authentication: .appSDK, rateLimits: [Limits.iapPerAddress, Limits.iapPerPurchase]) {
                request, context in
                await iap.handle(request, context: context)
            },
            Route("GET", "/.well-known/openid-configuration", authentication: .none) { _, _ in await oauth.discovery()
            },
            Route("GET", "/.well-known/jwks.json", authentication: .none) { _, context in
                await oauth.jwks(context: context)
            },
            Route("POST", "/oauth/token", authentication: .none, rateLimits: [Limits.tokenPerAddress]) {
                request, context in
                await oauth.token(request, context: context)
            },
            Route("GET", "/userinfo", authentication: .none, rateLimits: [Limits.userinfoPerAddress]) {
                request, context in await oauth.userinfo(request, context: context)
            },
            Route("GET", "/account/confirm-email", authentication: .none, rateLimits: [Limits.accountPagesPerAddress]) {
                _, context in
                pages.form(.confirmEmail, context: context)
            },
            Route("POST", "/account/confirm-email", authentication: .none, rateLimits: [Limits.accountPagesPerAddress])
            { request, context in
                await pages.submit(.confirmEmail, request, context: context)
            },
            Route("GET", "/account/reset-password", authentication: .none, rateLimits: [Limits.accountPagesPerAddress])
            { _, context in
                pages.form(.resetPassword, context: context)
            },
            Route("POST", "/account/reset-password", authentication: .none, rateLimits: [Limits.accountPagesPerAddress])
            { request, context in
                await pages.submit(.resetPassword, request, context: context)
            },
        ]
    }

    public func render(_ refusal: RouteRefusal) -> RouteResponse {
        Problem(refusal.code, refusal.message).response
    }
}

/// This dialect's error envelope, `{"error": CODE, "message": "..."}`, and the one table of its statuses.
struct Problem: Error {
    let code: String
    let message: String
    let status: Int

    init(_ code: ErrorCode, _ message: String) {
        self.code = code.rawValue
        self.message = message
        status = Self.status(code)
    }

    init(code: String, message: String, status: Int) {
        self.code = code
        self.message = message
        self.status = status
    }

    static func status(_ code: ErrorCode) -> Int {
        switch code {
        case .missingFields, .invalidField: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .duplicateTransaction: 409
        case .payloadTooLarge: 413
        case .productMismatch, .bundleMismatch, .environmentMismatch, .accountMismatch, .verificationFailed: 422
        case .rateLimited: 429
        case .verifierError: 503
        }
    }

    var response: RouteResponse {
        var headers: [(name: String, value: String)] = [("Cache-Control", "no-store")]
        if status == 401 { headers.append(("WWW-Authenticate", #"Bearer error="invalid_token""#)) }
        return .json(["error": code, "message": message], status: status, headers: headers)
    }
}
