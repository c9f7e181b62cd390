package import Foundation
package import HTTPServer
package import OpenSSLCrypto
package import ReceiptCore
package import Stripe
package import TestSupport

/// A local stand-in for Stripe's API on loopback, speaking its wire format: objects with their
/// `object` names, lists (`object: list`, `data`, `has_more`, `starting_after`), `expand[]`,
/// errors as `{"error": {"type", "code", "message"}}` with Stripe's statuses (401 for a key it
/// does not know, 404 `resource_missing`, 429 `rate_limit` with `Retry-After`), and the events it
/// keeps, which it signs for a webhook endpoint as Stripe does (`Stripe-Signature`).
package final class FakeStripe: Sendable {
    package static let apiKey = "sk_test_51FakeStripeKey0000000000000000"
    package static let account = "acct_1FakeStripeShop"
    package static let webhookSecret = "whsec_fakeStripeEndpointSecret0000000000"

    package final class State: Sendable {
        /// Every object by id, as Stripe would answer it (JSON).
        package let objects = LockedBox<[String: Data]>([:])
        /// A Checkout Session's line items (ids, in order).
        package let lineItems = LockedBox<[String: [String]]>([:])
        /// Events in the order they happened (the list answers newest first).
        package let events = LockedBox<[String]>([])
        /// Keys Stripe accepts.
        package let keys = LockedBox<Set<String>>([FakeStripe.apiKey])
        /// Statuses to answer first, per route name ("session", "line_items", "events", ...).
        package let failuresFirst = LockedBox<[String: [Int]]>([:])
        /// Seconds of `Retry-After` on an injected 429 (none when nil).
        package let retryAfterSeconds = LockedBox<Int?>(nil)
        /// Requests by route name.
        package let hits = LockedBox<[String: Int]>([:])
        /// Every request: its path, query pairs and the headers that matter.
        package let requests = LockedBox<[Request]>([])
        /// Events per page of the list at most (Stripe's limit is 100; tests page sooner).
        package let eventPageSize = LockedBox(100)
        package let sequence = LockedBox(0)
    }

    package struct Request: Sendable {
        package let path: String
        package let query: [(String, String)]
        package let version: String?
        package let account: String?
        package let authorization: String?
    }

    package let state = State()
    package let server: HTTPServer
    /// The fake's clock: objects and events are dated by it.
    package let clock: LockedBox<Date>

    package init(now: Date = Date()) throws {
        clock = LockedBox(now)
        server = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), responder: Self.routes(state))
        try server.start()
    }

    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    package var now: Date { clock.get() }
    package var unixNow: Int { Int(now.timeIntervalSince1970) }

    /// The provider's configuration for this fake.
    package func configuration(reconcileSeconds: Int = 900) throws -> StripeConfiguration {
        try StripeConfiguration.fromEnvironment([
            "RECEIPTGATE_STRIPE_API_URL": baseURL, "RECEIPTGATE_STRIPE_RECONCILE_INTERVAL": String(reconcileSeconds),
        ])
    }

    /// A client with this fake's account, key and secret.
    package func owner(
        clientID: String = "client-stripe", revokeOnDispute: Bool = false,
        environments: Set<StoreEnvironment> = [.sandbox, .production], secrets: String = FakeStripe.webhookSecret
    ) -> ClientWithStoreCredentials {
        ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: clientID, gameID: nil,
                appIdentifiers: [StripeProvider.accountKind.name: [Self.account]], environments: environments,
                settings: revokeOnDispute ? [StripeProvider.Setting.revokeOnDispute: ["on"]] : [:]),
            credentials: [StripeProvider.Setting.apiKey: Self.apiKey, StripeProvider.Setting.webhookSecret: secrets])
    }

    /// A fresh id with Stripe's prefix.
    package func newID(_ prefix: String) -> String {
        let number = state.sequence.update { value -> Int in
            value += 1
            return value
        }
        return "\(prefix)_test\(String(format: "%06d", number))\(Hex.encode(SecureRandom.bytes(4)))"
    }

    // MARK: - Objects

    package func put(_ object: [String: Any]) {
        guard let id = object["id"] as? String, let data = try? JSONSerialization.data(withJSONObject: object) else {
            return
        }
        state.objects.update { $0[id] = data }
    }

    package func object(_ id: String) -> [String: Any]? {
        state.objects.get()[id].flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }

    package func update(_ id: String, _ change: (inout [String: Any]) -> Void) {
        guard var object = object(id) else { return }
        change(&object)
        put(object)
    }

    // MARK: - Signing

    /// `Stripe-Signature` for `body` as Stripe makes it: `t=<time>,v1=<HMAC-SHA256 of "t.body">`.
    package static func signatureHeader(body: Data, secret: String = webhookSecret, timestamp: Int) throws -> String {
        var signed = Data("\(timestamp).".utf8)
        signed.append(body)
        let mac = try HMACSHA256.authenticationCode(key: Data(secret.utf8), message: signed)
        return "t=\(timestamp),v1=\(Hex.encode(mac))"
    }

    static func json(_ status: Int, _ object: Any, headers: [(String, String)] = []) -> HTTPResponse {
        var response = HTTPResponse(
            status: status, headers: ["Content-Type": "application/json"],
            body: (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
        for (name, value) in headers { response.headers.add(name, value) }
        return response
    }

    static func error(_ status: Int, type: String, code: String?, message: String) -> HTTPResponse {
        var error: [String: Any] = ["type": type, "message": message]
        if let code { error["code"] = code }
        return json(status, ["error": error])
    }
}
