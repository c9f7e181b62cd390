public import Foundation
public import ReceiptCore

/// The Hive Axyl server contract: an app server gets an access token with its client
/// id and secret, then verifies purchases and subscriptions with it. Tokens, the ledger and the
/// stores are the core's; this type translates the wire format and owns the one code table.
public struct HiveAxyl: DialectProvider {
    public let name = "hive-axyl"
    /// The opaque access tokens this dialect issues and its verify routes accept.
    package static let tokenKind = "hiveaxyl.access"
    /// The client setting listing the app ids (`X-App-Id`) a client may call with.
    package static let appIDsSetting = "hiveaxyl.app_ids"
    package static let tokenLifetimeVariable = "RECEIPTGATE_HIVEAXYL_TOKEN_SECONDS"
    package static let defaultTokenLifetime: Duration = .seconds(3600)

    /// Per client, per process: generous, it only stops a runaway caller.
    package static let perClient = RateLimitPolicy(
        name: "hiveaxyl.client", key: .client, limit: 6000, window: .seconds(60), shared: false)
    /// Token requests per caller address: each one checks a secret against the database.
    package static let tokenRequests = RateLimitPolicy(
        name: "hiveaxyl.token", key: .callerAddress, limit: 120, window: .seconds(60), shared: false)

    /// How long an access token lives (`expires_in`).
    public let tokenLifetime: Duration

    package init(tokenLifetime: Duration = HiveAxyl.defaultTokenLifetime) {
        self.tokenLifetime = tokenLifetime
    }

    /// A bad value stops start-up, naming the variable.
    public typealias Invalid = ConfigurationInvalid

    /// `RECEIPTGATE_HIVEAXYL_TOKEN_SECONDS`: 60 to 86400, default 3600.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> HiveAxyl {
        guard let raw = environment[tokenLifetimeVariable], !raw.isEmpty else { return HiveAxyl() }
        guard let seconds = Int(raw), (60...86_400).contains(seconds) else {
            throw Invalid(
                variable: tokenLifetimeVariable,
                problem: "must be a whole number of seconds from 60 to 86400, got \"\(raw.prefix(40))\"")
        }
        return HiveAxyl(tokenLifetime: .seconds(seconds))
    }

    public func routes(core: any DialectCore) -> [Route] {
        let lifetime = tokenLifetime
        // Hive Axyl's contract says only "put it in the Authorization header": clients send it bare or as Bearer.
        let bearer = RouteAuthentication.bearerToken(kind: Self.tokenKind, bareAccepted: true)
        return [
            Route("POST", "/auth/v1/token", authentication: .none) { request, context in
                await HiveAxylTokenEndpoint(core: core, lifetime: lifetime).respond(to: request, context: context)
            },
            Route("POST", "/payment/v1/purchase/verify", authentication: bearer, rateLimits: [Self.perClient]) {
                request, context in
                await HiveAxylVerifier(core: core, request: request, context: context).purchase()
            },
            Route("POST", "/payment/v1/subscription/verify", authentication: bearer, rateLimits: [Self.perClient]) {
                request, context in
                await HiveAxylVerifier(core: core, request: request, context: context).subscription()
            },
        ]
    }

    /// The core's refusals of the verify routes (401 bad token, 429 rate limit...) in the
    /// envelope; the core adds `WWW-Authenticate` and `Retry-After` itself.
    public func render(_ refusal: RouteRefusal) -> RouteResponse {
        HiveAxylResult.from(refusal.code, message: refusal.message).response
    }
}
