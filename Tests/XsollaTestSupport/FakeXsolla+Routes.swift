import Foundation
import HTTPServer
import TestSupport

extension FakeXsolla {
    static func routes(_ state: State) -> Responder {
        var router = Router()
        router.get("/merchants/{merchant_id}/reports/transactions/search.json") { request in
            state.queries.update { $0.append(request.query) }
            if let status = state.failuresFirst.update({ queue -> Int? in queue.isEmpty ? nil : queue.removeFirst() }) {
                var failure = error(status, "injected failure")
                if status == 429, let seconds = state.retryAfterSeconds.get() {
                    failure.headers.add("Retry-After", String(seconds))
                }
                return failure
            }
            let expected = "Basic " + Data("\(FakeXsolla.merchantID):\(state.apiKey.get())".utf8).base64EncodedString()
            guard request.headers["Authorization"] == expected,
                request.pathParameters["merchant_id"] == FakeXsolla.merchantID
            else { return error(401, "Invalid credentials") }
            let query = request.query
            var listed = state.transactions.get()
            if let id = query["transaction_id"] {
                listed = listed.filter { Self.transactionID(of: $0.json) == id }
            } else {
                guard let from = query["datetime_from"].flatMap(Self.time),
                    let to = query["datetime_to"].flatMap(Self.time),
                    from <= to, to.timeIntervalSince(from) <= 92 * 86_400
                else { return error(422, "datetime_from and datetime_to must name a period of 92 days at most") }
                let project = query["project_id"]
                listed = listed.filter { entry in
                    entry.at >= from && entry.at < to && (project == nil || project == entry.project)
                }
                if let status = query["status"] {
                    listed = listed.filter { Self.status(of: $0.json) == status }
                }
            }
            listed.sort { $0.at < $1.at }
            let offset = query["offset"].flatMap { Int($0) } ?? 0
            let limit = query["limit"].flatMap { Int($0) } ?? 100
            let page = listed.dropFirst(offset).prefix(limit)
            let body = "[" + page.map(\.json).joined(separator: ",") + "]"
            return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
        }
        return router.build(handlerExecutor: FakeServing.executor)
    }

    static func time(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.date(from: text)
    }

    static func transactionID(of json: String) -> String? {
        let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
        return ((object?["transaction"] as? [String: Any])?["id"]).map { "\($0)" }
    }

    static func status(of json: String) -> String? {
        let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
        return (object?["transaction"] as? [String: Any])?["status"] as? String
    }

    /// Xsolla's API error body.
    static func error(_ status: Int, _ message: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json"],
            body: Data(#"{"http_status_code":\#(status),"message":"\#(message)","request_id":"fake"}"#.utf8))
    }
}
