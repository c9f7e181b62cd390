public import Foundation
package import HTTPClient
public import ReceiptCore

/// Google Play as a store provider: purchase tokens proven with the Android Publisher API,
/// real-time developer notifications, post-commit acknowledgement and the voided-purchases poll.
public struct GooglePlayProvider: StoreProvider, NotificationReceiving, PurchaseAcknowledging {
    public let store = StoreID.googlePlay
    public let notificationPath = "/v1/notifications/google-play"
    public let configuration: GooglePlayConfiguration
    public let tokens: GoogleAccessTokens
    let api: AndroidPublisherClient
    let push: GooglePushAuthenticator
    let rentals: RentalPeriods
    let logger: Logger
    let now: @Sendable () -> Date

    /// Client settings (see docs/stores.md): a sealed per-client key, and plain switches.
    public enum Setting {
        package static let serviceAccountKey = "google_play.service_account_key"
        package static let licenseKey = "google_play.license_key"
        package static let acknowledge = "google_play.acknowledge"
        public static let consume = "google_play.consume"
    }

    package init(
        configuration: GooglePlayConfiguration, http: HTTPClient = HTTPClient(), logger: Logger = Logger(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        tokens = GoogleAccessTokens(http: http, now: now)
        api = AndroidPublisherClient(baseURL: configuration.apiURL, http: http, tokens: tokens, now: now)
        rentals = RentalPeriods(api: api, now: now)
        push = GooglePushAuthenticator(
            jwksURL: configuration.jwksURL, audience: configuration.pushAudience,
            serviceAccount: configuration.pushServiceAccount, http: http, now: now)
    }

    /// From the environment (docs/configuration.md, Google Play); throws `GooglePlayConfiguration.Invalid`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> GooglePlayProvider {
        GooglePlayProvider(configuration: try GooglePlayConfiguration.fromEnvironment(environment), now: now)
    }

    /// Verify, notifications, acknowledgement, the voided-purchases poll when it is on, and
    /// reading a quiet subscription back.
    public var registration: StoreRegistration {
        StoreRegistration(
            Self.declaration, verifier: self, notifications: self, acknowledgement: self,
            poller: configuration.voidedPurchasesInterval.map { VoidedPurchasePoller(provider: self, interval: $0) },
            subscriptionReader: self, refundAnswering: self, externalPurchaseReporting: self,
            subscriptionManager: self)
    }

    /// The client's own key if it registered one, else the service's.
    func serviceAccountKey(_ credentials: [String: String]) throws(StoreAPIError) -> ServiceAccountKey {
        if let json = credentials[Setting.serviceAccountKey] {
            do { return try ServiceAccountKey(json: Data(json.utf8)) } catch {
                throw GoogleAPIErrors.notConfigured("the client's Google service-account key is unusable: \(error)")
            }
        }
        guard let key = configuration.serviceAccountKey else {
            throw GoogleAPIErrors.notConfigured(
                "no Google service-account key: set RECEIPTGATE_GOOGLE_SERVICE_ACCOUNT_KEY_PATH "
                    + "or the client's --google-service-account-key")
        }
        return key
    }
}
