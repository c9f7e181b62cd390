package import Foundation
package import HTTPClient
import JSON
import OpenSSLCrypto
import ReceiptCore

/// App-level access tokens from Huawei's OAuth 2.0 endpoint (client credentials grant: the app
/// id and app secret), cached per app until shortly before they expire. Concurrent requests for
/// one app share one exchange: the first starts it, the others await the same task. The endpoint
/// refusing an app's id and secret is remembered for `failureLifetime` and answered from memory
/// meanwhile: a flood of requests for a misconfigured app (notifications anyone may send) costs
/// one exchange, not one each.
package final class HuaweiAccessTokens: Sendable {
    /// An app's credentials, as a client registered them.
    package struct App: Sendable, CustomStringConvertible {
        package let id: String
        package let secret: String

        package init(id: String, secret: String) {
            self.id = id
            self.secret = secret
        }

        /// The cache key: the app id and a digest of the secret, so a changed secret is a new app.
        var cacheKey: String { id + ":" + ((try? SHA256.hex(Data(secret.utf8))) ?? "") }
        /// Never the secret.
        package var description: String { "Huawei app \(id)" }
    }

    struct Token: Sendable {
        let value: String
        let expires: Date
    }

    private let url: String
    private let http: HTTPClient
    private let margin: TimeInterval
    private let now: @Sendable () -> Date
    /// Refusals by the OAuth endpoint are remembered too (one per registered app and secret at
    /// most: the key changes with the secret, so a corrected one is asked at once).
    private let cache: ExpiringCache<String, String>
    /// How many exchanges were made (tests count them).
    package var exchanges: Int { get async { await cache.fetches } }

    package init(
        url: String, http: HTTPClient, margin: TimeInterval = 300, failureLifetime: TimeInterval = 30,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.url = url
        self.http = http
        self.margin = margin
        self.now = now
        cache = ExpiringCache(
            now: now, failureLifetime: failureLifetime,
            remembersFailure: { ($0 as? StoreAPIError)?.kind == .credentialsRefused })
    }

    /// An access token for `app`, from the cache or one shared exchange.
    func token(for app: App) async throws -> String {
        let url = url, http = http, now = now, margin = margin
        return try await cache.value(for: app.cacheKey) {
            let token = try await Self.exchange(app, url: url, http: http, now: now)
            return (token.value, token.expires.addingTimeInterval(-margin))
        }
    }

    /// Forgets `token` (Huawei answered 401): the next call exchanges again. A newer token another
    /// request already fetched is kept.
    func invalidate(_ token: String, for app: App) async {
        await cache.invalidate(app.cacheKey) { $0 == token }
    }

    private static func exchange(
        _ app: App, url: String, http: HTTPClient, now: @Sendable () -> Date
    ) async throws -> Token {
        let issued = now()
        let form =
            "grant_type=client_credentials&client_id=\(formEncode(app.id))&client_secret=\(formEncode(app.secret))"
        var request = HTTPClient.Request(
            method: "POST", url: url, headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Data(form.utf8))
        request.timeout = .seconds(10)
        let response: HTTPClient.Response
        do { response = try await http.send(request) } catch {
            throw HuaweiAPIErrors.unavailable("the OAuth endpoint did not answer: \(error)")
        }
        let answer = try? JSONDecoder().decode(OAuthAnswer.self, from: response.body)
        switch response.status {
        case 200:
            guard let value = answer?.accessToken?.string, !value.isEmpty else {
                throw HuaweiAPIErrors.malformed("the OAuth endpoint answered without an access_token")
            }
            let lifetime = answer?.expiresIn?.double ?? 3600
            return Token(value: value, expires: issued.addingTimeInterval(lifetime))
        default:
            // Huawei's `{"error": 1101, "sub_error": 20001, "error_description": "..."}`: the app id or secret is wrong.
            let detail = [answer?.error, answer?.subError, answer?.errorDescription].compactMap { $0?.detail }
                .joined(separator: ": ")
            throw HuaweiAPIErrors.tokenEndpointAnswered(
                HTTPStatus(response.status), app: "\(app)", detail: String(detail.prefix(200)))
        }
    }

    /// The token endpoint's answer. Each field is taken as whatever JSON came: a wrong type reads
    /// as absent (or, for the refusal's detail, as its text), never as an unreadable answer.
    private struct OAuthAnswer: Decodable {
        var accessToken: JSONValue?
        var expiresIn: JSONValue?
        var error: JSONValue?
        var subError: JSONValue?
        var errorDescription: JSONValue?

        enum CodingKeys: String, CodingKey {
            case accessToken = "access_token", expiresIn = "expires_in", error, subError = "sub_error",
                errorDescription = "error_description"
        }
    }

    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

extension JSONValue {
    /// A refusal's field as text for the operator: a string as it is, a number or boolean as its
    /// value, anything else as its JSON; JSON null is nothing.
    fileprivate var detail: String? {
        switch self {
        case .string(let text): text
        case .null: nil
        default: numberText ?? (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
