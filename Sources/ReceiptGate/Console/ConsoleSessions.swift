import Foundation
import HTTPServer
import OpenSSLCrypto

/// The session cookie that follows signing in (`AdminTokenGate` checks the token), and the CSRF
/// token every console form carries.
///
/// The cookie is 32 random bytes; the database keeps only its SHA-256 (a leaked table opens no
/// session). A form's CSRF token is an HMAC of the cookie it was rendered for (the session's, or
/// before sign-in a pre-session cookie's) under a key derived from the admin token: a page on
/// another site can neither read the cookie nor compute the token, and every process sharing the
/// admin token checks it without a lookup.
struct ConsoleSessions: Sendable {
    static let sessionCookie = "rg_console"
    static let preSessionCookie = "rg_console_pre"
    /// Eight hours: a working day, after which the operator signs in again.
    static let lifetimeSeconds = 8 * 3600

    let repository: ConsoleRepository
    /// The listener is not loopback: plain HTTP there would carry the cookie in clear, so it is
    /// always `Secure` (and the console must sit behind TLS).
    let secureCookies: Bool
    let trustedProxies: [TrustedProxy]
    private let csrfKey: Data
    /// Which admin token a session was opened with: changing the token ends every session.
    private let tokenMark: String

    init(
        repository: ConsoleRepository, adminToken: String, secureCookies: Bool, trustedProxies: [TrustedProxy] = []
    ) throws {
        self.repository = repository
        self.secureCookies = secureCookies
        self.trustedProxies = trustedProxies
        csrfKey = try HMACSHA256.authenticationCode(
            key: Data(adminToken.utf8), message: Data("receiptgate console csrf".utf8))
        tokenMark = Hex.encode(
            try HMACSHA256.authenticationCode(
                key: Data(adminToken.utf8), message: Data("receiptgate console session".utf8)))
    }

    /// A new session: its cookie value and its label (what the audit log calls it).
    func open() async throws -> (cookie: String, label: String) {
        let cookie = Self.newCookieValue()
        let digest = try Self.digest(cookie)
        let label = "session " + digest.prefix(8)
        try await repository.openSession(
            cookieDigest: digest, label: label, tokenMark: tokenMark, lifetime: Self.lifetimeSeconds)
        return (cookie, label)
    }

    /// The signed-in session the request carries, if it is still open.
    func current(_ request: HTTPRequest) async throws -> ConsoleSession? {
        guard let cookie = Cookies.parse(request.headers["cookie"])[Self.sessionCookie], Self.isWellFormed(cookie)
        else { return nil }
        guard let label = try await repository.sessionLabel(cookieDigest: try Self.digest(cookie), tokenMark: tokenMark)
        else { return nil }
        return ConsoleSession(label: label, csrf: csrfToken(for: cookie), cookie: cookie)
    }

    func close(_ session: ConsoleSession) async throws {
        try await repository.closeSession(cookieDigest: try Self.digest(session.cookie))
    }

    func csrfToken(for cookie: String) -> String {
        (try? HMACSHA256.authenticationCode(key: csrfKey, message: Data(cookie.utf8))).map { Base64.urlEncode($0) }
            ?? ""
    }

    /// True when `token` was made for the request's session cookie; for the sign-in form (`preSession`),
    /// for its pre-session cookie. A pre-session token opens nothing else: anyone can get one, and a
    /// cookie planted in an operator's browser must not make a token their session's forms accept.
    func isValidCSRF(_ token: String?, request: HTTPRequest, preSession: Bool) -> Bool {
        guard let token, let given = Base64.urlDecode(token) else { return false }
        let name = preSession ? Self.preSessionCookie : Self.sessionCookie
        guard let cookie = Cookies.parse(request.headers["cookie"])[name], Self.isWellFormed(cookie),
            let expected = try? HMACSHA256.authenticationCode(key: csrfKey, message: Data(cookie.utf8))
        else { return false }
        return ConstantTime.equals(given, expected)
    }

    /// `Secure` unless the console is served on loopback over plain HTTP: a listener on another
    /// address, or a request a trusted proxy says came over HTTPS, gets it.
    func setCookie(_ name: String, _ value: String, maxAge: Int, for request: HTTPRequest) -> String {
        let secure = secureCookies || cameOverHTTPS(request)
        return "\(name)=\(value); Path=/console; Max-Age=\(maxAge); HttpOnly; SameSite=Strict"
            + (secure ? "; Secure" : "")
    }

    private func cameOverHTTPS(_ request: HTTPRequest) -> Bool {
        guard let peer = request.remoteAddress, trustedProxies.contains(where: { $0.contains(peer) }) else {
            return false
        }
        return request.headers["x-forwarded-proto"]?.split(separator: ",").first?.trimmingCharacters(in: .whitespaces)
            .lowercased() == "https"
    }

    /// The address that signs in: the peer, or what a trusted proxy says the caller is.
    func callerAddress(_ request: HTTPRequest) -> String {
        let forwarded = request.headers.fields.filter { HTTPHeaders.lowercasedName($0.name) == "x-forwarded-for" }.map(
            \.value)
        return TrustedProxy.callerAddress(
            peer: request.remoteAddress, forwardedFor: forwarded.isEmpty ? nil : forwarded.joined(separator: ", "),
            trusted: trustedProxies) ?? "unknown"
    }

    static func newCookieValue() -> String { Base64.urlEncode(SecureRandom.bytes(32)) }

    /// 43 base64url characters: anything else is not a cookie of ours (and is not hashed or looked up).
    static func isWellFormed(_ cookie: String) -> Bool {
        cookie.utf8.count == 43
            && cookie.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D
                    || $0 == 0x5F
            }
    }

    private static func digest(_ cookie: String) throws -> String { Hex.encode(try SHA256.hash(Data(cookie.utf8))) }
}

/// A signed-in operator's session, as a page sees it.
struct ConsoleSession: Sendable {
    /// What the audit log calls it (`session` and eight hex digits of the cookie's digest).
    let label: String
    /// The CSRF token the session's forms carry.
    let csrf: String
    let cookie: String
}
