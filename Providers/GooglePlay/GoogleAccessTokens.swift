package import Foundation
package import HTTPClient
import ReceiptCore

/// OAuth 2.0 access tokens for service accounts (JWT bearer grant), cached per key until a
/// minute before they expire (`ExpiringCache`: concurrent requests for one key share one exchange).
public final class GoogleAccessTokens: Sendable {
    public static let scope = "https://www.googleapis.com/auth/androidpublisher"
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    struct Token: Sendable {
        let value: String
        let expires: Date
    }

    private let http: HTTPClient
    private let now: @Sendable () -> Date
    private let cache: ExpiringCache<String, String>
    /// How many exchanges were made (tests count them).
    package var exchanges: Int { get async { await cache.fetches } }

    package init(http: HTTPClient, now: @escaping @Sendable () -> Date = { Date() }) {
        self.http = http
        self.now = now
        cache = ExpiringCache(now: now)
    }

    /// A bearer token for `key`, from the cache or one shared exchange.
    func token(for key: ServiceAccountKey) async throws -> String {
        let http = http, now = now
        return try await cache.value(for: key.cacheKey) {
            let token = try await Self.exchange(key, http: http, now: now)
            return (token.value, token.expires.addingTimeInterval(-60))
        }
    }

    /// Forgets `token` (Google said 401): the next call exchanges again. A newer token another
    /// request already fetched is kept.
    func invalidate(_ token: String, for key: ServiceAccountKey) async {
        await cache.invalidate(key.cacheKey) { $0 == token }
    }

    private static func exchange(
        _ key: ServiceAccountKey, http: HTTPClient, now: @Sendable () -> Date
    ) async throws -> Token {
        let issued = now()
        let assertion: String
        do { assertion = try key.assertion(scope: scope, now: issued) } catch {
            throw GoogleAPIErrors.notConfigured("cannot sign with \(key): \(error)")
        }
        let form = "grant_type=\(formEncode(grantType))&assertion=\(formEncode(assertion))"
        var request = HTTPClient.Request(
            method: "POST", url: key.tokenURI, headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Data(form.utf8))
        request.timeout = .seconds(10)
        let response: HTTPClient.Response
        do { response = try await http.send(request) } catch {
            throw GoogleAPIErrors.unavailable("the token endpoint did not answer: \(error)")
        }
        struct Answer: Decodable {
            let access_token: String?; let expires_in: Int?; let error: String?; let error_description: String?
        }
        let answer = try? JSONDecoder().decode(Answer.self, from: response.body)
        switch response.status {
        case 200:
            guard let value = answer?.access_token, !value.isEmpty else {
                throw GoogleAPIErrors.malformed(
                    "the token endpoint answered without an access_token", status: HTTPStatus(200))
            }
            return Token(value: value, expires: issued.addingTimeInterval(TimeInterval(answer?.expires_in ?? 3600)))
        default:
            let detail = [answer?.error, answer?.error_description].compactMap { $0 }.joined(separator: ": ")
            throw GoogleAPIErrors.tokenEndpointAnswered(
                HTTPStatus(response.status), key: "\(key)", detail: String(detail.prefix(200)))
        }
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
