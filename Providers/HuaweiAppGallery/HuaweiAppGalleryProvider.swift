public import Foundation
package import HTTPClient
public import ReceiptCore

extension StoreID {
    public static let huaweiAppGallery = StoreID(rawValue: "huawei_appgallery")
}

/// Huawei AppGallery as a store provider: purchase tokens proven with Huawei IAP's order and
/// subscription services (the signed purchase data checked with the app's IAP public key),
/// consumables confirmed after their first claim, IAP notifications (v2) and the cancelled or
/// refunded purchases list, each entry re-read from Huawei before it changes the ledger, and quiet
/// subscriptions read back.
public struct HuaweiAppGalleryProvider: StoreProvider, NotificationReceiving, PurchaseAcknowledging {
    public let store = StoreID.huaweiAppGallery
    public let notificationPath = "/v1/notifications/huawei-appgallery"
    public let configuration: HuaweiAppGalleryConfiguration
    package let tokens: HuaweiAccessTokens
    /// Huawei's services as verifies, the poll and read-backs ask them (retried with back-off).
    private(set) var api: HuaweiOrderClient
    /// The same services as order notifications ask them: a client of their own (see
    /// `notificationClient`), the access tokens shared.
    let notificationAPI: HuaweiOrderClient
    /// What order notifications (unsigned: anyone may send one) may make us ask Huawei, and how often.
    let notificationReads: HuaweiNotificationReadGate
    /// The same for signed subscription events, on a client and gate of their own: made-up order
    /// notifications never hold what they need.
    let signedNotificationAPI: HuaweiOrderClient
    let signedNotificationReads: HuaweiNotificationReadGate
    let logger: Logger
    let now: @Sendable () -> Date

    /// Client settings: the app id and IAP key plain, the app secret sealed (a credential).
    public enum Setting {
        public static let appID = "huawei_appgallery.app_id"
        public static let appSecret = "huawei_appgallery.app_secret"
        public static let iapPublicKey = "huawei_appgallery.iap_public_key"
    }

    /// `http` asks Huawei for verifies, the poll and read-backs; notifications' re-reads go
    /// through `notificationClient`s of their own, one for order notifications and one for signed
    /// subscription events. Separate clients have separate transfer slots: anyone may post an
    /// order notification, and a flood of them must not hold the slots a purchase's verification
    /// or a signed notification needs.
    package init(
        configuration: HuaweiAppGalleryConfiguration, http: HTTPClient = HTTPClient(),
        logger: Logger = Logger(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        tokens = HuaweiAccessTokens(
            url: configuration.oauthURL, http: http, margin: configuration.tokenRefreshMargin,
            failureLifetime: configuration.oauthFailureLifetime, now: now)
        api = HuaweiOrderClient(configuration: configuration, http: http, tokens: tokens, now: now)
        let reads = configuration.notificationReads
        notificationAPI = HuaweiOrderClient(
            configuration: configuration, http: Self.notificationClient(reads), tokens: tokens, now: now)
        notificationReads = HuaweiNotificationReadGate(limits: reads, lane: .unsigned, now: now)
        signedNotificationAPI = HuaweiOrderClient(
            configuration: configuration, http: Self.notificationClient(reads), tokens: tokens, now: now)
        signedNotificationReads = HuaweiNotificationReadGate(limits: reads, lane: .signed, now: now)
    }

    /// A client for notifications' re-reads: its own transfer slots, shared by apps (the gate
    /// bounds each app's share), one attempt (Huawei sends a refused notification again), a short
    /// timeout and an answer no bigger than a purchase's signed data needs.
    package static func notificationClient(_ limits: HuaweiAppGalleryConfiguration.NotificationReads) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.concurrentTransfers = max(1, limits.threads)
        configuration.retry = .none
        configuration.timeout = limits.timeout
        configuration.connectTimeout = min(.seconds(3), limits.timeout)
        configuration.maxResponseBytes = 64 << 10
        return HTTPClient(configuration)
    }

    /// This provider asking Huawei through `client` in place of its own: `fetch` on it reads and
    /// checks exactly as a verify does, only on other threads and without retries.
    func reading(through client: HuaweiOrderClient) -> HuaweiAppGalleryProvider {
        var reader = self
        reader.api = client
        return reader
    }

    /// From the environment; throws `ConfigurationInvalid`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> HuaweiAppGalleryProvider {
        HuaweiAppGalleryProvider(
            configuration: try HuaweiAppGalleryConfiguration.fromEnvironment(environment), now: now)
    }

    /// Verify, notifications, the confirmation of consumables, the cancelled-purchases poll when it
    /// is on, and reading a quiet subscription back.
    public var registration: StoreRegistration {
        StoreRegistration(
            Self.declaration, verifier: self, notifications: self, acknowledgement: self,
            poller: configuration.cancelledPurchasesInterval.map {
                HuaweiCancelledPurchasesPoller(provider: self, interval: $0)
            },
            subscriptionReader: self)
    }

    /// What a client must have registered to ask Huawei: its app id and secret, and the IAP key
    /// its answers are checked with.
    struct Access: Sendable {
        let app: HuaweiAccessTokens.App
        let key: HuaweiIAPKey
    }

    static func access(client: ClientInfo?, credentials: [String: String]) throws(StoreAPIError) -> Access {
        guard let id = client?.setting(Setting.appID), !id.isEmpty else {
            throw HuaweiAPIErrors.notConfigured("this client has no Huawei app id (--huawei-app-id)")
        }
        guard let secret = credentials[Setting.appSecret], !secret.isEmpty else {
            throw HuaweiAPIErrors.notConfigured("this client has no Huawei app secret (--huawei-app-secret)")
        }
        guard let encoded = client?.setting(Setting.iapPublicKey) else {
            throw HuaweiAPIErrors.notConfigured("this client has no Huawei IAP public key (--huawei-iap-public-key)")
        }
        do { return Access(app: .init(id: id, secret: secret), key: try HuaweiIAPKey(base64: encoded)) } catch {
            throw HuaweiAPIErrors.notConfigured("the client's Huawei IAP public key \(error)")
        }
    }
}
