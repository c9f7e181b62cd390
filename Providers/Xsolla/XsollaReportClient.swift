import Foundation
import HTTPClient
import JSON
import ReceiptCore

/// Xsolla's transactions report, `GET {api}/merchants/{merchant_id}/reports/transactions/search.json`
/// (Pay Station API, "Find transactions"), authenticated with HTTP Basic as merchant id and API
/// key. Searched by transaction id (a verify) or by date range, paged with `offset` and `limit`
/// (the poll). 429 and 5xx are retried by the HTTP client, then reported as unavailable with the
/// answer's `Retry-After`.
struct XsollaReportClient: Sendable {
    let baseURL: String
    let http: HTTPClient
    /// The service's clock, against which a `Retry-After` date is read.
    let now: @Sendable () -> Date

    /// The records naming `transactionID` (one, or none).
    func transaction(
        _ transactionID: String, access: XsollaProvider.Access, deadline: ContinuousClock.Instant?
    ) async throws -> [[String: JSONValue]] {
        try await search(["transaction_id": transactionID, "show_dry_run": "1"], access: access, deadline: deadline)
    }

    /// One page of the transactions made in `[from, to)` in `project`, test ones included; only
    /// those in `status` (`refunded`, `canceled`) when it is named.
    func page(
        project: String, from: Date, to: Date, offset: Int, limit: Int, status: String? = nil,
        access: XsollaProvider.Access
    ) async throws -> [[String: JSONValue]] {
        var query = [
            "project_id": project, "datetime_from": XsollaValues.reportTime(from),
            "datetime_to": XsollaValues.reportTime(to), "offset": String(offset), "limit": String(limit),
            "show_dry_run": "1",
        ]
        if let status { query["status"] = status }
        return try await search(query, access: access, deadline: nil)
    }

    private func search(
        _ query: [String: String], access: XsollaProvider.Access, deadline: ContinuousClock.Instant?
    ) async throws -> [[String: JSONValue]] {
        var components = URLComponents()
        components.queryItems = query.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        let path = "/merchants/\(access.merchantID)/reports/transactions/search.json"
        var request = HTTPClient.Request(
            method: "GET", url: baseURL + path + "?" + (components.percentEncodedQuery ?? ""),
            headers: [
                ("Authorization", "Basic " + Data("\(access.merchantID):\(access.apiKey)".utf8).base64EncodedString()),
                ("Accept", "application/json"),
            ])
        if let deadline {
            guard deadline > ContinuousClock.now else {
                throw XsollaAPIErrors.unavailable("the request's deadline passed before Xsolla was asked")
            }
            request.deadline = deadline
        }
        let response: HTTPClient.Response
        do { response = try await http.send(request) } catch {
            throw XsollaAPIErrors.unavailable("GET \(path) failed: \(error)")
        }
        let status = HTTPStatus(response.status)
        guard status.isSuccess else {
            let message = JSONValue(parsing: response.body)?["message"].flatMap(XsollaValues.text)
            throw XsollaAPIErrors.answered(
                status, message: message, request: "GET \(path)", retryAfter: response.askedToWait(now: now()))
        }
        guard let records = JSONValue(parsing: response.body)?.array else {
            throw XsollaAPIErrors.malformed("Xsolla's transactions report is not a JSON list")
        }
        return records.compactMap(\.object)
    }
}
