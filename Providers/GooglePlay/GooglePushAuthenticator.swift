import Foundation
import HTTPClient
import OpenSSLCrypto
import ReceiptCore

/// Checks the OIDC token Google's Pub/Sub puts on an authenticated push: RS256 by a key of
/// Google's JWKS (fetched over HTTP, cached as its `Cache-Control` allows, refetched once for an
/// unknown `kid`), issuer Google, the configured audience and service account, a verified
/// e-mail, not expired.
actor GooglePushAuthenticator {
    let jwksURL: String
    let audience: String?
    let serviceAccount: String?
    let http: HTTPClient
    let now: @Sendable () -> Date
    private var keys: [String: PublicKey] = [:]
    private var keysExpire = Date.distantPast
    private var lastFetch = Date.distantPast
    /// How many times the JWKS was fetched (tests count them).
    private(set) var fetches = 0

    static let issuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]
    static let leeway: TimeInterval = 60

    init(
        jwksURL: String, audience: String?, serviceAccount: String?, http: HTTPClient,
        now: @escaping @Sendable () -> Date
    ) {
        self.jwksURL = jwksURL
        self.audience = audience
        self.serviceAccount = serviceAccount
        self.http = http
        self.now = now
    }

    var isConfigured: Bool { audience != nil && serviceAccount != nil }

    /// Throws `NotificationRejection` (.forged for a bad token, .retryable if the JWKS cannot be had).
    func check(bearer token: String) async throws {
        guard let audience, let serviceAccount else {
            throw NotificationRejection(
                .forged, reason: "PUSH_AUTH_NOT_CONFIGURED", message: "OIDC push authentication is not configured")
        }
        guard let jws = try? CompactJWS(parsing: token) else { throw Self.forged("the bearer token is not a JWT") }
        guard jws.header.alg == "RS256" else { throw Self.forged("the push token must be RS256") }
        guard let kid = jws.header.kid else { throw Self.forged("the push token names no key (kid)") }
        guard let key = try await key(kid) else {
            throw Self.forged("the push token is signed by a key Google does not publish")
        }
        guard jws.isValidSignature(using: key, allowedAlgorithms: ["RS256"]) else {
            throw Self.forged("the push token's signature is invalid")
        }
        struct Claims: Decodable {
            let iss: String?
            let aud: String?
            let email: String?
            let email_verified: Bool?
            let exp: Double?
            let iat: Double?
        }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: jws.payload) else {
            throw Self.forged("the push token's claims are malformed")
        }
        let current = now().timeIntervalSince1970
        guard let iss = claims.iss, Self.issuers.contains(iss) else {
            throw Self.forged("the push token is not issued by Google")
        }
        guard claims.aud == audience else { throw Self.forged("the push token is for another audience") }
        guard claims.email == serviceAccount else { throw Self.forged("the push token is for another service account") }
        guard claims.email_verified == true else { throw Self.forged("the push token's e-mail is not verified") }
        guard let exp = claims.exp, exp + Self.leeway > current else { throw Self.forged("the push token has expired") }
        if let iat = claims.iat, iat - Self.leeway > current {
            throw Self.forged("the push token is issued in the future")
        }
    }

    private func key(_ kid: String) async throws -> PublicKey? {
        let current = now()
        if current >= keysExpire || (keys[kid] == nil && current.timeIntervalSince(lastFetch) > 30) {
            try await refresh()
        }
        return keys[kid]
    }

    private func refresh() async throws {
        fetches += 1
        lastFetch = now()
        var request = HTTPClient.Request(url: jwksURL)
        request.timeout = .seconds(10)
        let response: HTTPClient.Response
        do { response = try await http.send(request) } catch {
            throw NotificationRejection(
                .retryable, reason: "JWKS_UNAVAILABLE", message: "Google's signing keys could not be fetched")
        }
        struct JWKS: Decodable {
            struct Key: Decodable {
                let kid: String?; let kty: String?; let n: String?; let e: String?; let alg: String?
            }; let keys: [Key]
        }
        guard response.status == 200, let set = try? JSONDecoder().decode(JWKS.self, from: response.body) else {
            throw NotificationRejection(
                .retryable, reason: "JWKS_UNAVAILABLE",
                message: "Google's signing keys answered HTTP \(response.status)")
        }
        var fresh: [String: PublicKey] = [:]
        for entry in set.keys where entry.kty == "RSA" && (entry.alg == nil || entry.alg == "RS256") {
            guard let kid = entry.kid, let n = entry.n.flatMap(Base64.urlDecode),
                let e = entry.e.flatMap(Base64.urlDecode),
                let key = try? PublicKey(rsaModulus: n, exponent: e)
            else { continue }
            fresh[kid] = key
        }
        keys = fresh
        keysExpire = lastFetch.addingTimeInterval(Self.maxAge(response.header("Cache-Control")))
    }

    /// `max-age` of a Cache-Control header; without one (or with no-store/no-cache), five minutes.
    static func maxAge(_ header: String?) -> TimeInterval {
        guard let header else { return 300 }
        var age: TimeInterval = 300
        for directive in header.lowercased().split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if directive == "no-store" || directive == "no-cache" { return 0 }
            if directive.hasPrefix("max-age="), let seconds = Double(directive.dropFirst(8)), seconds >= 0 {
                age = min(seconds, 86_400)
            }
        }
        return age
    }

    static func forged(_ message: String) -> NotificationRejection {
        NotificationRejection(.forged, reason: "INVALID_PUSH_TOKEN", message: message)
    }
}
