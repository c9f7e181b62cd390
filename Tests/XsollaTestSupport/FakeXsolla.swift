package import Foundation
package import HTTPClient
package import HTTPServer
package import TestSupport
package import Xsolla

/// A local stand-in for Xsolla on loopback: the transactions report of the merchant API
/// (`GET /merchants/{merchant_id}/reports/transactions/search.json`, HTTP Basic with the merchant
/// id and API key, searched by transaction id or by date range and project, paged with `offset`
/// and `limit`, answering Xsolla's error body), and the webhooks Xsolla sends, signed as Xsolla
/// signs them (SHA-1 of the body followed by the project's secret key).
package final class FakeXsolla: Sendable {
    package static let merchantID = "2340"
    package static let projectID = "18404"
    package static let apiKey = "xsolla-api-key-0123456789abcdef"
    package static let webhookSecret = "xsolla-webhook-secret-fedcba9876543210"

    /// A transaction as the report lists it, with the time it is filed under.
    package struct Listed: Sendable {
        package let at: Date
        package let project: String
        package let json: String
    }

    package final class State: Sendable {
        package let transactions = LockedBox<[Listed]>([])
        /// Statuses to answer first (401, 422, 429, 500 ...), in order.
        package let failuresFirst = LockedBox<[Int]>([])
        /// Seconds of `Retry-After` on an injected 429 (none when nil).
        package let retryAfterSeconds = LockedBox<Int?>(nil)
        /// Every report query received.
        package let queries = LockedBox<[[String: String]]>([])
        package let apiKey = LockedBox(FakeXsolla.apiKey)
    }

    package let state = State()
    package let server: HTTPServer

    package init() throws {
        server = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), responder: Self.routes(state))
        try server.start()
    }

    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    package var queries: [[String: String]] { state.queries.get() }
    package func failFirst(_ statuses: [Int]) { state.failuresFirst.set(statuses) }
    package func shutdown() async { await server.shutdown() }

    /// The provider's configuration for this fake.
    package func configuration() -> XsollaConfiguration {
        (try? XsollaConfiguration.fromEnvironment(["RECEIPTGATE_XSOLLA_API_URL": baseURL])) ?? XsollaConfiguration()
    }

    /// A client's plain settings and sealed credentials for this fake's project.
    package static func clientSettings(
        knownPlayersOnly: Bool = false
    ) -> (
        settings: [String: [String]], credentials: [String: String]
    ) {
        var settings = [XsollaProvider.Setting.merchantID: [merchantID]]
        if knownPlayersOnly { settings[XsollaProvider.Setting.knownPlayersOnly] = ["on"] }
        return (
            settings,
            [XsollaProvider.Setting.apiKey: apiKey, XsollaProvider.Setting.webhookSecret: webhookSecret]
        )
    }

    /// An HTTP client that retries quickly, as tests want.
    package static func http(retries: Int = 3) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.retry = .init(maxAttempts: retries, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        configuration.timeout = .seconds(60)
        return HTTPClient(configuration)
    }

    /// Lists a transaction in the report.
    package func list(_ record: [String: Any], at: Date, project: String = FakeXsolla.projectID) throws {
        let listed = Listed(at: at, project: project, json: try Self.text(record))
        state.transactions.update { $0.append(listed) }
    }

    /// Lists a transaction in the report in place of what it listed under the same id (its
    /// status moved: refunded, canceled).
    package func relist(_ record: [String: Any], at: Date, project: String = FakeXsolla.projectID) throws {
        let listed = Listed(at: at, project: project, json: try Self.text(record))
        let id = Self.transactionID(of: listed.json)
        state.transactions.update { all in
            all.removeAll { Self.transactionID(of: $0.json) == id }
            all.append(listed)
        }
    }

    package static func text(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }
}
