import Foundation
import HTTPClient
import JSON
import ReceiptCore

/// Steam's partner Web API as this provider calls it (partner.steamgames.com/doc/webapi_overview):
/// `POST` with a form-encoded body, `GET` with a query, the publisher key as the `key` parameter
/// of both. Every answer is `{"response": {"result": "OK"|"Failure", "params": {…}, "error":
/// {"errorcode", "errordesc"}}}` with HTTP 200; `ISteamUserAuth` puts `result` and the error
/// inside `params`/`error` the same way, so both are read here. A `POST` is sent once (an
/// `InitTxn` or `FinalizeTxn` whose answer is lost is asked about, never repeated); a `GET` is
/// retried by the HTTP client on 429 and 5xx.
struct SteamAPI: Sendable {
    let baseURL: String
    let http: HTTPClient
    let now: @Sendable () -> Date

    /// The interface for microtransactions: the sandbox's while a client tests
    /// (`ISteamMicroTxnSandbox` takes the same calls and charges nothing).
    static func microTxn(sandbox: Bool) -> String { sandbox ? "ISteamMicroTxnSandbox" : "ISteamMicroTxn" }

    /// Calls `interface/method/vN` with `parameters` and the key; the answer's `params`. Throws
    /// `StoreAPIError` (a `Failure` by its error code's table).
    func call(
        _ method: String, _ interface: String, _ name: String, version: Int, parameters: [(String, String)],
        key: String, deadline: ContinuousClock.Instant?
    ) async throws(StoreAPIError) -> [String: JSONValue] {
        let path = "/\(interface)/\(name)/v\(version)/"
        let encoded = Self.encoded([("key", key)] + parameters)
        var request: HTTPClient.Request
        if method == "POST" {
            request = HTTPClient.Request(
                method: "POST", url: baseURL + path,
                headers: [("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json")],
                body: Data(encoded.utf8))
            request.retryable = false
        } else {
            request = HTTPClient.Request(
                method: "GET", url: baseURL + path + "?" + encoded, headers: [("Accept", "application/json")])
        }
        if let deadline {
            guard deadline > ContinuousClock.now else {
                throw SteamAPIErrors.unavailable("the request's deadline passed before Steam was asked")
            }
            request.deadline = deadline
        }
        let response: HTTPClient.Response
        do { response = try await http.send(request) } catch {
            // The error's message may quote the URL, which holds the key on a GET: only its code is kept.
            let kind = (error as? HTTPClientError).map { "\($0.code)" } ?? "\(type(of: error))"
            throw SteamAPIErrors.unavailable("\(name) failed before an answer (\(kind))")
        }
        guard response.status == 200 else {
            throw SteamAPIErrors.answered(response.status, request: name, retryAfter: response.askedToWait(now: now()))
        }
        guard let envelope = JSONValue(parsing: response.body)?["response"]?.object else {
            throw SteamAPIErrors.malformed("Steam answered \(name) with something other than its response envelope")
        }
        let params = envelope["params"]?.object ?? [:]
        let result = envelope["result"]?.string ?? params["result"]?.string
        let error = envelope["error"]?.object ?? params["error"]?.object
        guard result == "OK", error == nil else {
            throw SteamAPIErrors.failure(
                code: (error?["errorcode"]?.numberText ?? error?["errorcode"]?.string).flatMap { Int($0) },
                description: error?["errordesc"]?.string, request: name)
        }
        return params
    }

    /// A form or query as Steam reads it: brackets left as they are (`itemid[0]`).
    static func encoded(_ parameters: [(String, String)]) -> String {
        parameters.map { "\(escaped($0.0))=\(escaped($0.1))" }.joined(separator: "&")
    }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~[]")

    private static func escaped(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}

extension JSONValue {
    /// A Steam number: v2 and later methods send 64-bit ids as strings, counts as numbers.
    var steamText: String? { string ?? numberText }

    /// A boolean, sent as `true`/`false` (or, by older methods, `1`/`0`).
    var flag: Bool? {
        if case .bool(let value) = self { return value }
        return numberText.map { $0 != "0" }
    }
}
