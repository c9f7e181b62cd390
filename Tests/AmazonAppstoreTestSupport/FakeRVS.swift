package import AmazonAppstore
package import Foundation
package import HTTPClient
package import HTTPServer
package import TestSupport

/// A local stand-in for Amazon's Receipt Verification Service on loopback: production under
/// `/version/1.0/verifyReceiptId/...` and the Cloud Sandbox under `/sandbox/...`, with RVS's
/// statuses (400 unknown receipt, 496 bad shared secret, 497 wrong user) and its JSON answer.
/// Paths are read as sent and each segment percent-decoded, as a real server does.
package final class FakeRVS: Sendable {
    /// With the characters a path must carry encoded, so a client that forgets to is caught.
    package static let sharedSecret = "2:smXBjZ+kWCxD/MSBvQ8H=secret"

    package final class State: Sendable {
        /// Receipts by receipt id: the user they belong to, the environment that knows them, RVS's JSON.
        package let receipts = LockedBox<[String: (userID: String, sandbox: Bool, json: String)]>([:])
        /// Statuses to answer first, whatever is asked, one per request.
        package let failuresFirst = LockedBox<[Int]>([])
        /// A status to answer every request with, when set.
        package let alwaysStatus = LockedBox<Int?>(nil)
        package let retryAfter = LockedBox<String?>(nil)
        /// How long each verify request is held before it is answered, when set: a slow RVS.
        package let answerDelay = LockedBox<Duration?>(nil)
        /// One entry per verify request: "production" or "sandbox".
        package let hits = LockedBox<[String]>([])
    }

    package let state = State()
    package let server: HTTPServer

    package init() throws {
        var router = Router()
        router.use(Handler(state: state))
        server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0),
            responder: router.build(handlerExecutor: FakeServing.executor))
        try server.start()
    }

    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    package var hits: [String] { state.hits.get() }

    /// A receipt as RVS answers it (dates in epoch ms, null where unset).
    package func addReceipt(
        _ receiptID: String, userID: String, sandbox: Bool = false, productType: String = "CONSUMABLE",
        productID: String = "gems100", purchaseDate: Date = Date(timeIntervalSince1970: 1_716_389_123),
        cancelDate: Date? = nil, cancelReason: Int? = nil, renewalDate: Date? = nil, quantity: Int? = 1,
        termSku: String? = nil, test: Bool = false, beta: Bool = false, autoRenewing: Bool? = nil
    ) throws {
        func millis(_ date: Date?) -> Any { date.map { Int64($0.timeIntervalSince1970 * 1000) } ?? NSNull() }
        let object: [String: Any] = [
            "autoRenewing": autoRenewing ?? false, "betaProduct": beta, "cancelDate": millis(cancelDate),
            "cancelReason": cancelReason ?? NSNull(),
            "countryCode": "US", "deferredDate": NSNull(), "deferredSku": NSNull(), "freeTrialEndDate": NSNull(),
            "gracePeriodEndDate": NSNull(),
            "parentProductId": NSNull(), "productId": productID, "productType": productType, "promotions": NSNull(),
            "purchaseDate": millis(purchaseDate), "quantity": quantity ?? NSNull(), "receiptId": receiptID,
            "renewalDate": millis(renewalDate),
            "term": termSku == nil ? NSNull() : "1 Month", "termSku": termSku ?? NSNull(), "testTransaction": test,
        ]
        let json = String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        state.receipts.update { $0[receiptID] = (userID, sandbox, json) }
    }

    /// The provider's configuration for this fake: quick retries, the given SNS certificate rule.
    package func configuration(certURLPattern: String? = nil, attempts: Int = 3) -> AmazonAppstoreConfiguration {
        var configuration = AmazonAppstoreConfiguration()
        configuration.rvsURL = baseURL
        if let certURLPattern { configuration.snsCertURLPattern = certURLPattern }
        configuration.rvsRetry = .init(maxAttempts: attempts, baseDelay: .milliseconds(10), maxDelay: .milliseconds(40))
        return configuration
    }

    /// An HTTP client for the provider; its own retries stay off (the provider does them).
    package static func http() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.retry = .none
        configuration.timeout = .seconds(60)
        return HTTPClient(configuration)
    }

    package func shutdown() async { await server.shutdown() }

    struct Handler: HTTPMiddleware {
        let state: State

        func handle(_ request: HTTPRequest, next: HTTPHandler) async throws -> HTTPResponse {
            let raw =
                request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(
                    String.init) ?? ""
            var parts = raw.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
            let sandbox = parts.first == "sandbox"
            if sandbox { parts.removeFirst() }
            guard request.method == "GET", parts.count == 9, parts[0] == "version", parts[1] == "1.0",
                parts[2] == "verifyReceiptId",
                parts[3] == "developer", parts[5] == "user", parts[7] == "receiptId",
                let secret = parts[4].removingPercentEncoding, let user = parts[6].removingPercentEncoding,
                let receipt = parts[8].removingPercentEncoding
            else { return try await next(request) }
            state.hits.update { $0.append(sandbox ? "sandbox" : "production") }
            if let delay = state.answerDelay.get() { try? await Task.sleep(for: delay) }
            if let status = state.failuresFirst.update({ queue -> Int? in queue.isEmpty ? nil : queue.removeFirst() })
                ?? state.alwaysStatus.get()
            {
                return Self.error(status, "injected failure", retryAfter: state.retryAfter.get())
            }
            // The Cloud Sandbox takes any non-empty secret; production only the developer's.
            guard sandbox ? !secret.isEmpty : secret == FakeRVS.sharedSecret else {
                return Self.error(496, "Invalid developerSecret")
            }
            guard let entry = state.receipts.get()[receipt], entry.sandbox == sandbox else {
                return Self.error(400, "Invalid transaction")
            }
            guard entry.userID == user else { return Self.error(497, "Invalid User") }
            return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(entry.json.utf8))
        }

        static func error(_ status: Int, _ message: String, retryAfter: String? = nil) -> HTTPResponse {
            var headers: HTTPHeaders = ["Content-Type": "application/json"]
            if let retryAfter { headers.add("Retry-After", retryAfter) }
            return HTTPResponse(
                status: status, headers: headers, body: Data(#"{"message":"\#(message)","status":false}"#.utf8))
        }
    }
}
