import Foundation
import HTTPClient
import ReceiptCore

/// Stripe's REST API as this provider reads it: `GET`s only, each with the client's key
/// (`Authorization: Bearer`), the pinned `Stripe-Version`, and `Stripe-Account` when the object
/// belongs to a connected account. 429 and 5xx are retried by the HTTP client with back-off
/// (honouring `Retry-After`), then reported as unavailable with the wait Stripe asked for.
struct StripeAPI: Sendable {
    let baseURL: String
    let http: HTTPClient
    /// The service's clock, against which a `Retry-After` date is read.
    let now: @Sendable () -> Date

    /// One request's credentials and bounds.
    struct Caller: Sendable {
        let apiKey: String
        /// The connected account the object belongs to (`Stripe-Account`), for a Connect event.
        var connectedAccount: String?
        var deadline: ContinuousClock.Instant?
    }

    /// `GET {path}?{query}`: the object Stripe answers. Throws `StoreAPIError`.
    func get(_ path: String, _ query: [(String, String)] = [], as caller: Caller) async throws -> StripeObject {
        var headers: [(name: String, value: String)] = [
            ("Authorization", "Bearer \(caller.apiKey)"), ("Stripe-Version", StripeConfiguration.apiVersion),
            ("Accept", "application/json"),
        ]
        if let account = caller.connectedAccount { headers.append(("Stripe-Account", account)) }
        let url = baseURL + path + (query.isEmpty ? "" : "?" + Self.encoded(query))
        var request = HTTPClient.Request(method: "GET", url: url, headers: headers)
        if let deadline = caller.deadline {
            guard deadline > ContinuousClock.now else {
                throw StripeAPIErrors.unavailable("the request's deadline passed before Stripe was asked")
            }
            request.deadline = deadline
        }
        let response: HTTPClient.Response
        do { response = try await http.send(request) } catch {
            throw StripeAPIErrors.unavailable("GET \(path) failed: \(error)")
        }
        let status = HTTPStatus(response.status)
        guard status.isSuccess else {
            throw StripeAPIErrors.answered(
                status, error: Self.errorBody(response.body), request: "GET \(path)",
                retryAfter: response.askedToWait(now: now()))
        }
        guard let object = StripeObject(parsing: response.body) else {
            throw StripeAPIErrors.malformed("Stripe answered GET \(path) with something other than a JSON object")
        }
        return object
    }

    /// Every page of a list (`has_more`, `starting_after`), up to `maxPages`.
    func all(
        _ path: String, _ query: [(String, String)] = [], as caller: Caller, maxPages: Int = 10
    ) async throws -> [StripeObject] {
        var found: [StripeObject] = [], after: String?
        for _ in 0..<maxPages {
            let page = try await get(
                path, query + [("limit", "100")] + (after.map { [("starting_after", $0)] } ?? []), as: caller)
            found += page.data
            guard page.hasMore, let last = page.data.last?.id, last != after else { break }
            after = last
        }
        return found
    }

    /// Stripe's error envelope, when the body is one.
    static func errorBody(_ body: Data) -> StripeErrorBody? {
        guard let error = StripeObject(parsing: body)?.object("error") else { return nil }
        return StripeErrorBody(type: error.string("type"), code: error.string("code"), message: error.string("message"))
    }

    /// A query as Stripe reads it: form encoding, brackets included (`expand[]`, `created[gte]`).
    static func encoded(_ query: [(String, String)]) -> String {
        query.map { "\(escaped($0.0))=\(escaped($0.1))" }.joined(separator: "&")
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private static func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}
