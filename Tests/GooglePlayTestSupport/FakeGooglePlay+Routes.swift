import Foundation
import HTTPServer
import OpenSSLCrypto
import TestSupport

extension FakeGooglePlay {
    static func routes(_ state: State, oidcModulus: Data, oidcExponent: Data) -> Responder {
        var router = Router()
        @Sendable func counted(
            _ route: String, authenticated: Bool = true,
            _ body: @escaping @Sendable (HTTPRequest) async throws -> HTTPResponse
        ) -> HTTPHandler {
            { request in
                state.hits.update { $0[route, default: 0] += 1 }
                if let status = state.failuresFirst.update({ failures -> Int? in
                    guard var queue = failures[route], !queue.isEmpty else { return nil }
                    let first = queue.removeFirst()
                    failures[route] = queue
                    return first
                }) {
                    return googleError(
                        status,
                        status == 429 ? "RESOURCE_EXHAUSTED" : status >= 500 ? "UNAVAILABLE" : "PERMISSION_DENIED",
                        "injected failure", headers: status == 429 ? ["Retry-After": state.retryAfter.get()] : [:])
                }
                if authenticated {
                    guard let header = request.headers["Authorization"], header.hasPrefix("Bearer "),
                        state.issuedTokens.get().contains(String(header.dropFirst(7)))
                    else {
                        return googleError(
                            401, "UNAUTHENTICATED",
                            "Request had invalid authentication credentials. Expected OAuth 2 access token.")
                    }
                }
                return try await body(request)
            }
        }

        router.post(
            "/token",
            counted("token", authenticated: false) { request in
                let form = formFields(request.body)
                let delay = state.tokenDelay.get()
                if delay > .zero { try await Task.sleep(for: delay) }
                guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer",
                    let assertion = form["assertion"]
                else {
                    return json(400, #"{"error":"unsupported_grant_type","error_description":"Invalid grant_type."}"#)
                }
                state.assertions.update { $0.append(assertion) }
                guard checkAssertion(assertion, state: state) else {
                    return json(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
                }
                let token = "ya29.fake-" + Hex.encode(SecureRandom.bytes(12))
                state.issuedTokens.update { _ = $0.insert(token) }
                return json(200, #"{"access_token":"\#(token)","expires_in":3599,"token_type":"Bearer"}"#)
            })

        let app = "/androidpublisher/v3/applications/{package}/purchases"
        // Deprecated or removed from the discovery document: refused as Google refuses a removed
        // method, and remembered, so a test fails if ReceiptGate calls one.
        router.get(
            "\(app)/products/{product}/tokens/{token}",
            counted("products") { _ in deprecated("GET purchases/products") })
        router.get(
            "\(app)/subscriptions/{product}/tokens/{token}",
            counted("subscriptions") { _ in deprecated("GET purchases/subscriptions") })
        @Sendable func deprecated(_ call: String) -> HTTPResponse {
            state.deprecatedCalls.update { $0.append(call) }
            return googleError(410, "NOT_FOUND", "This method is deprecated and no longer available.")
        }
        router.get(
            "\(app)/productsv2/tokens/{token}",
            counted("productsv2") { request in
                guard let entry = state.products.get()[try request.parameter("token")],
                    entry.package == (try request.parameter("package"))
                else {
                    return notFound()
                }
                return json(200, entry.v2)
            })
        router.get(
            "\(app)/subscriptionsv2/tokens/{token}",
            counted("subscriptionsv2") { request in
                guard let entry = state.subscriptions.get()[try request.parameter("token")],
                    entry.package == (try request.parameter("package"))
                else {
                    return notFound()
                }
                return json(200, entry.json)
            })
        router.post(
            "\(app)/products/{product}/tokens/{action}",
            counted("acknowledge") { request in
                try act(request, kind: "products", known: { state.products.get()[$0]?.package })
            })
        router.post(
            "\(app)/subscriptions/{product}/tokens/{action}",
            counted("acknowledge") { request in
                // acknowledge stays (it has no successor); cancel, refund, revoke and defer are deprecated.
                let verb = try request.parameter("action").split(separator: ":").last.map(String.init) ?? ""
                if ["cancel", "refund", "revoke", "defer"].contains(verb) {
                    return deprecated("POST purchases/subscriptions:\(verb)")
                }
                return try act(request, kind: "subscriptions", known: { state.subscriptions.get()[$0]?.package })
            })
        router.post(
            "\(app)/subscriptionsv2/tokens/{action}",
            counted("subscriptionsv2.change") { request in try changeSubscription(request, state: state) })
        router.get(
            "/androidpublisher/v3/applications/{package}/oneTimeProducts/{product}",
            counted("onetimeproducts") { request in
                let key = "\(try request.parameter("package"))/\(try request.parameter("product"))"
                guard let product = state.oneTimeProducts.get()[key] else {
                    return googleError(404, "NOT_FOUND", "Requested entity was not found.")
                }
                return json(200, product)
            })
        router.get(
            "/androidpublisher/v3/applications/{package}/orders:batchGet",
            counted("orders") { request in
                // orderIds repeated in the query (1 to 1000, distinct); one unknown fails them all.
                let ids = queryValues(request.target, "orderIds")
                let package = try request.parameter("package")
                guard (1...1000).contains(ids.count), Set(ids).count == ids.count else {
                    return googleError(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
                }
                let known = state.orders.get()
                var found: [String] = []
                for id in ids {
                    guard let order = known[id], order.package == package else {
                        return googleError(404, "NOT_FOUND", "Order not found.")
                    }
                    found.append(order.json)
                }
                return json(200, #"{"orders":[\#(found.joined(separator: ","))]}"#)
            })
        @Sendable func act(_ request: HTTPRequest, kind: String, known: (String) -> String?) throws -> HTTPResponse {
            let parts = try request.parameter("action").split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2, ["acknowledge", "consume"].contains(parts[1]) else { return notFound() }
            guard known(parts[0]) == (try request.parameter("package")) else { return notFound() }
            let product = (try? request.parameter("product")) ?? ""
            state.actions.update { $0.append("\(parts[1]) \(kind)/\(product) \(parts[0])") }
            return json(200, "")
        }
        router.post(
            "/androidpublisher/v3/applications/{package}/orders/{action}",
            counted("reviewrefund") { request in
                // orders.reviewrefund, checked as Google documents its body; Google records only the first answer.
                let parts = try request.parameter("action").split(separator: ":", maxSplits: 1).map(String.init)
                guard parts.count == 2, parts[1] == "reviewrefund" else { return notFound() }
                let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
                let events = body["consumptionUsageEvents"] as? [Any] ?? []
                guard let token = body["pendingRefundToken"] as? String,
                    state.pendingRefundTokens.get()[token] == parts[0],
                    body["sampleContentProvided"] is Bool,
                    ["APPROVE", "DECLINE", "NEUTRAL"].contains(body["refundPreference"] as? String ?? ""),
                    body["consumptionPercentageMilliunits"].map({
                        ($0 as? Int).map { (0...100_000).contains($0) } == true
                    }) ?? true,
                    events.count <= 1000
                else {
                    return googleError(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
                }
                let package = try request.parameter("package")
                state.refundReviews.update {
                    $0.append((orderID: parts[0], package: package, body: body.mapValues { "\($0)" }))
                }
                return json(200, "{}")
            })
        router.get(
            "\(app)/voidedpurchases",
            counted("voided") { request in
                state.voidedQueries.update { $0.append(request.query) }
                // Google lists the voids whose voidedTimeMillis falls in [startTime, endTime].
                let from = request.query["startTime"].flatMap { Int64($0) } ?? 0
                let until = request.query["endTime"].flatMap { Int64($0) } ?? Int64.max
                let all = (state.voided.get()[try request.parameter("package")] ?? []).filter {
                    $0.voidedAt >= from && $0.voidedAt <= until
                }.map(\.json)
                let size = state.voidedPageSize.get()
                let start = Int(request.query["token"]?.replacingOccurrences(of: "page-", with: "") ?? "0") ?? 0
                let page = Array(all.dropFirst(start).prefix(size))
                let next =
                    start + size < all.count ? #","tokenPagination":{"nextPageToken":"page-\#(start + size)"}"# : ""
                return json(200, #"{"voidedPurchases":[\#(page.joined(separator: ","))]\#(next)}"#)
            })

        router.get(
            "/oauth2/v3/certs",
            counted("jwks", authenticated: false) { _ in
                let body =
                    #"{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":"\#(oidcKeyID)","n":"\#(Base64.urlEncode(oidcModulus))","e":"\#(Base64.urlEncode(oidcExponent))"}]}"#
                return HTTPResponse(
                    status: 200,
                    headers: [
                        "Content-Type": "application/json",
                        "Cache-Control": "public, max-age=\(state.jwksMaxAge.get()), must-revalidate",
                    ],
                    body: Data(body.utf8))
            })
        externalTransactionRoutes(&router, state: state, counted: counted)
        return router.build(handlerExecutor: FakeServing.executor)
    }

    /// Google's own checks on a JWT bearer assertion.
    static func checkAssertion(_ assertion: String, state: State) -> Bool {
        guard let jws = try? CompactJWS(parsing: assertion), jws.header.alg == "RS256",
            jws.isValidSignature(using: state.accountKey, allowedAlgorithms: ["RS256"]),
            let claims = try? JSONSerialization.jsonObject(with: jws.payload) as? [String: Any],
            claims["iss"] as? String == clientEmail,
            claims["scope"] as? String == "https://www.googleapis.com/auth/androidpublisher",
            claims["aud"] as? String == state.tokenURI.get(),
            let iat = claims["iat"] as? Int, let exp = claims["exp"] as? Int,
            exp > Int(Date().timeIntervalSince1970), exp - iat <= 3600
        else { return false }
        return true
    }

    static func formFields(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            fields[parts[0].removingPercentEncoding ?? parts[0]] =
                parts[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return fields
    }

    static func json(_ status: Int, _ body: String, headers: HTTPHeaders = [:]) -> HTTPResponse {
        var all = headers
        all.replace("Content-Type", "application/json; charset=UTF-8")
        return HTTPResponse(status: status, headers: all, body: Data(body.utf8))
    }

    static func googleError(
        _ status: Int, _ code: String, _ message: String, headers: HTTPHeaders = [:]
    ) -> HTTPResponse {
        json(
            status,
            #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(code)","errors":[{"message":"\#(message)","domain":"global","reason":"\#(code.lowercased())"}]}}"#,
            headers: headers)
    }

    static func notFound() -> HTTPResponse { googleError(404, "NOT_FOUND", "The purchase token was not found.") }
}
