public import Foundation
package import HTTPClient
public import ReceiptCore

extension StoreID {
    public static let xsolla = StoreID(rawValue: "xsolla")
}

/// Xsolla as a store: a web shop's payment provider. Its webhooks (Pay Station payments, Web Shop
/// orders, refunds, subscriptions, user validation) arrive signed with the project's secret key on
/// a route that names the client, and are believed only once the signature holds and, for a
/// payment or refund, once the transactions report still says it (the signature carries no time);
/// a paid one is the purchase's claim for the player it names. A transaction id sent to `/v1/verify` is read
/// from Xsolla's transactions report (the merchant id and API key), and the same report, read by
/// date, reconciles what webhooks missed.
public struct XsollaProvider: StoreProvider, NotificationReceiving {
    public let store = StoreID.xsolla
    public let notificationPath = "/v1/notifications/xsolla/{client_id}"
    public let configuration: XsollaConfiguration
    let reports: XsollaReportClient
    let logger: Logger
    let now: @Sendable () -> Date

    /// Client settings: the project and merchant ids plain, the API key and the webhook secret
    /// sealed (credentials), and whether user validation accepts only players ReceiptGate knows.
    public enum Setting {
        public static let merchantID = "xsolla.merchant_id"
        public static let apiKey = "xsolla.api_key"
        public static let webhookSecret = "xsolla.webhook_secret"
        public static let knownPlayersOnly = "xsolla.known_players_only"
    }

    package init(
        configuration: XsollaConfiguration, http: HTTPClient = HTTPClient(), logger: Logger = Logger(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        reports = XsollaReportClient(baseURL: configuration.apiURL, http: http, now: now)
    }

    /// From the environment; throws `ConfigurationInvalid`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> XsollaProvider {
        XsollaProvider(configuration: try XsollaConfiguration.fromEnvironment(environment), now: now)
    }

    /// Verify, webhooks, and the transactions report poll when it is on.
    public var registration: StoreRegistration {
        StoreRegistration(
            Self.declaration, verifier: self, notifications: self,
            poller: configuration.reconcileInterval.map { XsollaTransactionsPoller(provider: self, interval: $0) })
    }

    /// What the report API is asked with: the merchant id and API key (HTTP Basic).
    struct Access: Sendable, CustomStringConvertible {
        let merchantID: String
        let apiKey: String

        var description: String { "Xsolla merchant \(merchantID)" }
    }

    static func access(client: ClientInfo?, credentials: [String: String]) throws(StoreAPIError) -> Access {
        guard let merchant = client?.setting(Setting.merchantID), !merchant.isEmpty else {
            throw XsollaAPIErrors.notConfigured("this client has no Xsolla merchant id (--xsolla-merchant-id)")
        }
        guard let key = credentials[Setting.apiKey], !key.isEmpty else {
            throw XsollaAPIErrors.notConfigured("this client has no Xsolla API key (--xsolla-api-key)")
        }
        return Access(merchantID: merchant, apiKey: key)
    }
}
