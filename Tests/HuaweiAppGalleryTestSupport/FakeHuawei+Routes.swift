import Foundation
import HTTPServer
import OpenSSLCrypto
import TestSupport

extension FakeHuawei {
    static func routes(_ state: State, key: PrivateKey, forger: PrivateKey) -> Responder {
        var router = Router()
        @Sendable func counted(
            _ route: String, authenticated: Bool = true,
            _ body: @escaping @Sendable (HTTPRequest, [String: String]) async throws -> HTTPResponse
        ) -> HTTPHandler {
            { request in
                state.hits.update { $0[route, default: 0] += 1 }
                if let status = state.failuresFirst.update({ failures -> Int? in
                    guard var queue = failures[route], !queue.isEmpty else { return nil }
                    let first = queue.removeFirst()
                    failures[route] = queue
                    return first
                }) {
                    var failure = json(status, #"{"error":"injected failure"}"#)
                    if status == 429, let seconds = state.retryAfterSeconds.get() {
                        failure.headers.add("Retry-After", String(seconds))
                    }
                    return failure
                }
                if authenticated {
                    // Authorization: Basic base64("APPAT:" + access token).
                    guard let header = request.headers["Authorization"], header.hasPrefix("Basic "),
                        let decoded = Data(base64Encoded: String(header.dropFirst(6))).map({
                            String(decoding: $0, as: UTF8.self)
                        }),
                        decoded.hasPrefix("APPAT:"), state.issuedTokens.get().contains(String(decoded.dropFirst(6)))
                    else {
                        return json(401, #"{"error":"invalid access token"}"#)
                    }
                    if let appInfo = request.headers["HW-IAP-APPINFO"] {
                        state.appInfoHeaders.update { $0.append(appInfo) }
                    }
                }
                let fields = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: String] ?? [:]
                return try await body(request, fields)
            }
        }
        @Sendable func signed(_ request: HTTPRequest, _ data: String, field: String) throws -> HTTPResponse {
            let askedForPSS = request.headers["HW-IAP-APPINFO"]?.contains("SHA256WithRSA/PSS") == true
            let (signature, algorithm) = try sign(
                data, signing: state.signing.get(), askedForPSS: askedForPSS, key: key, forger: forger)
            var object: [String: Any] = [
                "responseCode": "0", "responseMessage": "success", field: data, "dataSignature": signature,
            ]
            if let algorithm { object["signatureAlgorithm"] = algorithm }
            return json(200, try text(object))
        }

        router.post(
            "/oauth2/v3/token",
            counted("token", authenticated: false) { request, _ in
                let form = formFields(request.body)
                guard form["grant_type"] == "client_credentials" else {
                    return json(400, #"{"error":1102,"sub_error":20003,"error_description":"unsupported grant_type"}"#)
                }
                guard let id = form["client_id"], let secret = state.apps.get()[id], form["client_secret"] == secret
                else {
                    return json(401, #"{"error":1101,"sub_error":20001,"error_description":"invalid client"}"#)
                }
                let token = "CV7fake" + Hex.encode(SecureRandom.bytes(12))
                state.issuedTokens.update { _ = $0.insert(token) }
                return json(
                    200,
                    #"{"access_token":"\#(token)","expires_in":\#(state.tokenLifetime.get()),"token_type":"Bearer"}"#)
            })
        router.post(
            "/applications/purchases/tokens/verify",
            counted("verify") { request, fields in
                await state.passUnlessHeld(fields["purchaseToken"])
                if let token = fields["purchaseToken"], state.subscriptions.get()[token] != nil {
                    // A subscription's token sent to the order service: Huawei's "critical error".
                    return json(200, #"{"responseCode":"6","responseMessage":"IAP_RESPONSE_RESULT_ERROR"}"#)
                }
                guard let token = fields["purchaseToken"], let entry = state.products.get()[token] else {
                    return json(200, #"{"responseCode":"8","responseMessage":"ERROR_INVALID_PAYMENTTOKEN"}"#)
                }
                if state.superseded.get().contains(token) {
                    // Only the latest token of a product verifies: one confirmed and bought again is history.
                    return json(200, #"{"responseCode":"12","responseMessage":"IAP_RECORD_NOT_EXIST"}"#)
                }
                if state.checksProduct.get(), entry.productID != fields["productId"] {
                    return json(200, #"{"responseCode":"5","responseMessage":"productId is invalid"}"#)
                }
                return try signed(request, entry.json, field: "purchaseTokenData")
            })
        router.post(
            "/sub/applications/v2/purchases/get",
            counted("subscription") { request, fields in
                guard let token = fields["purchaseToken"], let entry = state.subscriptions.get()[token],
                    entry.subscriptionID == fields["subscriptionId"]
                else {
                    return json(200, #"{"responseCode":"6","responseMessage":"rights invalid"}"#)
                }
                return try signed(request, entry.json, field: "inappPurchaseData")
            })
        router.post(
            "/applications/v2/purchases/confirm",
            counted("confirm") { _, fields in
                guard let token = fields["purchaseToken"], let productID = fields["productId"],
                    state.products.get()[token]?.productID == productID
                else {
                    return json(200, #"{"responseCode":"8","responseMessage":"the product is not owned"}"#)
                }
                let already = state.confirmations.update { confirmations -> Bool in
                    let line = "\(productID) \(token)"
                    if confirmations.contains(line) { return true }
                    confirmations.append(line)
                    return false
                }
                if !already { try markConfirmed(state, token: token) }
                return json(
                    200,
                    already
                        ? #"{"responseCode":"9","responseMessage":"already confirmed"}"#
                        : #"{"responseCode":"0","responseMessage":"success"}"#)
            })
        router.post(
            "/applications/v2/purchases/cancelledList",
            counted("cancelled") { request, _ in
                try cancelledList(state, body: request.body)
            })
        return router.build(handlerExecutor: FakeServing.executor)
    }

    /// Huawei's record of a confirmed purchase: `confirmed` 1 (and a consumable consumed) in what
    /// it answers from then on.
    static func markConfirmed(_ state: State, token: String) throws {
        guard let entry = state.products.get()[token],
            var object = try JSONSerialization.jsonObject(with: Data(entry.json.utf8)) as? [String: Any]
        else { return }
        object["confirmed"] = 1
        if object["kind"] as? Int == 0 { object["consumptionState"] = 1 }
        let confirmed = try text(object)
        state.products.update { $0[token] = (entry.productID, confirmed) }
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

    static func json(_ status: Int, _ body: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json; charset=UTF-8"], body: Data(body.utf8))
    }
}
