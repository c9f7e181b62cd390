import Foundation
import HTTPServer
import TestSupport

extension FakeStripe {
    static func routes(_ state: State) -> Responder {
        var router = Router()
        @Sendable func served(
            _ route: String, _ body: @escaping @Sendable (HTTPRequest, [(String, String)]) throws -> HTTPResponse
        ) -> HTTPHandler {
            { request in
                let query = queryPairs(request.target)
                state.requests.update {
                    $0.append(
                        Request(
                            path: request.path, query: query, version: request.headers["Stripe-Version"],
                            account: request.headers["Stripe-Account"], authorization: request.headers["Authorization"])
                    )
                }
                state.hits.update { $0[route, default: 0] += 1 }
                if let status = state.failuresFirst.update({ failures -> Int? in
                    guard var queue = failures[route], !queue.isEmpty else { return nil }
                    let first = queue.removeFirst()
                    failures[route] = queue
                    return first
                }) {
                    if status == 429 {
                        var response = error(
                            429, type: "invalid_request_error", code: "rate_limit",
                            message: "Too many requests hit the API too quickly.")
                        if let seconds = state.retryAfterSeconds.get() {
                            response.headers.add("Retry-After", String(seconds))
                        }
                        return response
                    }
                    return error(status, type: "api_error", code: nil, message: "injected failure")
                }
                guard let header = request.headers["Authorization"], header.hasPrefix("Bearer "),
                    state.keys.get().contains(String(header.dropFirst(7)))
                else {
                    return error(
                        401, type: "invalid_request_error", code: nil,
                        message: "Invalid API Key provided: sk_test_****")
                }
                return try body(request, query)
            }
        }
        @Sendable func stored(_ id: String, kind: String) -> [String: Any]? {
            guard let data = state.objects.get()[id],
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                object["object"] as? String == kind
            else { return nil }
            return object
        }
        @Sendable func missing(_ kind: String, _ id: String) -> HTTPResponse {
            error(404, type: "invalid_request_error", code: "resource_missing", message: "No such \(kind): '\(id)'")
        }
        // `expand[]` as Stripe reads it: a dotted path expands every object on its way
        // (`payment_intent.latest_charge.refunds`); a charge's refunds only when the path names them.
        @Sendable func expand(_ object: [String: Any], _ path: ArraySlice<Substring>) -> [String: Any] {
            guard let first = path.first else { return object }
            let key = String(first), rest = path.dropFirst()
            var inner = object[key] as? [String: Any]
            if let id = object[key] as? String, let data = state.objects.get()[id],
                var loaded = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            {
                if loaded["object"] as? String == "charge", rest.first != "refunds" { loaded["refunds"] = nil }
                inner = loaded
            }
            guard let inner else { return object }
            var object = object
            object[key] = expand(inner, rest)
            return object
        }
        @Sendable func expanded(_ object: [String: Any], _ query: [(String, String)]) -> [String: Any] {
            query.filter { $0.0 == "expand[]" }.reduce(object) { object, pair in
                expand(object, pair.1.split(separator: ".")[...])
            }
        }
        @Sendable func list(_ items: [[String: Any]], url: String, query: [(String, String)]) -> HTTPResponse {
            let limit = query.last { $0.0 == "limit" }.flatMap { Int($0.1) } ?? 10
            var items = items
            if let after = query.last(where: { $0.0 == "starting_after" })?.1 {
                guard let index = items.firstIndex(where: { $0["id"] as? String == after }) else {
                    return error(
                        400, type: "invalid_request_error", code: "resource_missing",
                        message: "No such object: '\(after)'")
                }
                items = Array(items[(index + 1)...])
            }
            return json(
                200,
                ["object": "list", "url": url, "has_more": items.count > limit, "data": Array(items.prefix(limit))])
        }
        func get(_ path: String, _ route: String, kind: String) {
            router.get(
                path,
                served(route) { request, query in
                    let id = try request.parameter("id")
                    guard let object = stored(id, kind: kind) else { return missing(kind, id) }
                    return json(200, expanded(object, query))
                })
        }
        get("/v1/checkout/sessions/{id}", "session", kind: "checkout.session")
        get("/v1/disputes/{id}", "dispute", kind: "dispute")
        get("/v1/invoices/{id}", "invoice", kind: "invoice")
        get("/v1/subscriptions/{id}", "subscription", kind: "subscription")
        get("/v1/payment_intents/{id}", "payment_intent", kind: "payment_intent")
        router.get(
            "/v1/charges/{id}",
            served("charge") { request, query in
                let id = try request.parameter("id")
                guard var charge = stored(id, kind: "charge") else { return missing("charge", id) }
                // Since 2022-11-15 a charge's refunds are listed only when expanded.
                if !query.contains(where: { $0 == ("expand[]", "refunds") }) { charge["refunds"] = nil }
                return json(200, charge)
            })
        router.get(
            "/v1/checkout/sessions/{id}/line_items",
            served("line_items") { request, query in
                let id = try request.parameter("id")
                guard stored(id, kind: "checkout.session") != nil else { return missing("checkout.session", id) }
                let items = (state.lineItems.get()[id] ?? []).compactMap { stored($0, kind: "item") }
                return list(items, url: "/v1/checkout/sessions/\(id)/line_items", query: query)
            })
        router.get(
            "/v1/checkout/sessions",
            served("sessions") { _, query in
                let intent = query.last { $0.0 == "payment_intent" }?.1
                let subscription = query.last { $0.0 == "subscription" }?.1
                let sessions = all(state, kind: "checkout.session").filter {
                    (intent == nil || $0["payment_intent"] as? String == intent)
                        && (subscription == nil || $0["subscription"] as? String == subscription)
                }
                return list(sessions, url: "/v1/checkout/sessions", query: query)
            })
        router.get(
            "/v1/disputes",
            served("disputes") { _, query in
                let charge = query.last { $0.0 == "charge" }?.1
                let disputes = all(state, kind: "dispute").filter { charge == nil || $0["charge"] as? String == charge }
                return list(disputes, url: "/v1/disputes", query: query)
            })
        router.get(
            "/v1/invoice_payments",
            served("invoice_payments") { _, query in
                let intent = query.last { $0.0 == "payment[payment_intent]" }?.1
                let invoice = query.last { $0.0 == "invoice" }?.1
                let payments = all(state, kind: "invoice_payment").filter {
                    (intent == nil || (($0["payment"] as? [String: Any])?["payment_intent"] as? String) == intent)
                        && (invoice == nil || $0["invoice"] as? String == invoice)
                }
                return list(payments, url: "/v1/invoice_payments", query: query)
            })
        router.get(
            "/v1/events",
            served("events") { _, query in
                let since = query.last { $0.0 == "created[gte]" }.flatMap { Int($0.1) } ?? 0
                let before = query.last { $0.0 == "created[lt]" }.flatMap { Int($0.1) } ?? Int.max
                let types = Set(query.filter { $0.0 == "types[]" }.map(\.1))
                let events = state.events.get().reversed().compactMap { stored($0, kind: "event") }.filter {
                    let created = $0["created"] as? Int ?? 0
                    return created >= since && created < before
                        && (types.isEmpty || types.contains($0["type"] as? String ?? ""))
                }
                var limited = query.filter { $0.0 != "limit" }
                let asked = query.last { $0.0 == "limit" }.flatMap { Int($0.1) } ?? 10
                limited.append(("limit", String(min(asked, state.eventPageSize.get()))))
                return list(events, url: "/v1/events", query: limited)
            })
        return router.build()
    }

    /// Every stored object of a kind, newest first as Stripe lists them.
    static func all(_ state: State, kind: String) -> [[String: Any]] {
        state.objects.get().values.compactMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
            .filter { $0["object"] as? String == kind }
            .sorted {
                ($0["created"] as? Int ?? 0, $0["id"] as? String ?? "") > (
                    $1["created"] as? Int ?? 0, $1["id"] as? String ?? ""
                )
            }
    }

    /// The query's pairs in order, repeated names kept (`types[]`, `expand[]`).
    static func queryPairs(_ target: String) -> [(String, String)] {
        guard let start = target.firstIndex(of: "?") else { return [] }
        return target[target.index(after: start)...].split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
    }
}
