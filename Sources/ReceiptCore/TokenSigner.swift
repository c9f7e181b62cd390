public import Foundation

/// Signs and checks JSON Web Tokens with the service's own keys (ES256, with a `kid`). The
/// private keys never leave the core: a dialect hands over claims and gets a compact JWT, and
/// relying parties check it against the published key set. Keys are shared by every process on
/// the database and rotated from the command line; a rotated key stays published until tokens
/// it signed have expired.
public protocol TokenSigner: Sendable {
    /// Who issues the tokens (`RECEIPTGATE_PUBLIC_URL`), also the base of links in e-mails.
    var issuer: String { get }
    /// How long an access token lives; retired keys stay published at least this long.
    var accessTokenLifetime: Duration { get }
    /// Signs a JSON object (the claims) with the current key: `header.payload.signature`.
    func sign(claims: Data) async throws -> String
    /// The claims of a token signed by one of the published keys, or nil (bad signature,
    /// unknown key, malformed). Expiry and audience are the caller's to check.
    func verifiedClaims(_ token: String) async throws -> Data?
    /// The published public keys as a JWK Set document.
    func jwks() async throws -> Data
}

/// The signer of a core that has none configured: every call fails.
public struct UnavailableTokenSigner: TokenSigner {
    package struct Unavailable: Error, CustomStringConvertible {
        package init() {}
        package var description: String { "this core has no token signing keys" }
    }

    package init() {}
    public var issuer: String { "" }
    public var accessTokenLifetime: Duration { .seconds(900) }
    public func sign(claims: Data) async throws -> String { throw Unavailable() }
    public func verifiedClaims(_ token: String) async throws -> Data? { nil }
    public func jwks() async throws -> Data { Data(#"{"keys":[]}"#.utf8) }
}
