public import Foundation
package import HTTPClient
public import ReceiptCore

extension StoreID {
    public static let stripe = StoreID(rawValue: "stripe")
}

/// Stripe as a store: a web shop's Checkout Sessions (each line item a purchase of its product),
/// the subscriptions they start, and what happens to their charges afterwards (refunds,
/// disputes). Every client has its own Stripe account, key and webhook endpoint, so nothing is
/// shared between clients: a webhook's signature is checked with its endpoint's secret before the
/// body is read, and every object it names is read back from Stripe with that client's key
/// before the ledger moves. The event list is read per client to apply what a lost webhook told.
public struct StripeProvider: StoreProvider, NotificationReceiving {
    public let store = StoreID.stripe
    /// One endpoint per client: its signing secret is that endpoint's.
    public let notificationPath = "/v1/notifications/stripe/{client_id}"
    public let configuration: StripeConfiguration
    let api: StripeAPI
    let logger: Logger
    let now: @Sendable () -> Date

    /// Client settings: the API key and webhook signing secrets sealed, the dispute policy plain.
    public enum Setting {
        public static let apiKey = "stripe.api_key"
        public static let webhookSecret = "stripe.webhook_secret"
        public static let revokeOnDispute = "stripe.revoke_on_dispute"
    }

    package init(
        configuration: StripeConfiguration, http: HTTPClient = HTTPClient(), logger: Logger = Logger(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        api = StripeAPI(baseURL: configuration.apiURL, http: http, now: now)
    }

    /// From the environment; throws `ConfigurationInvalid`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> StripeProvider {
        StripeProvider(configuration: try StripeConfiguration.fromEnvironment(environment), now: now)
    }

    /// Verify, webhooks, and the event list's reconciliation when it is on.
    public var registration: StoreRegistration {
        StoreRegistration(
            Self.declaration, verifier: self, notifications: self,
            poller: configuration.reconcileInterval.map { StripeEventPoller(provider: self, interval: $0) })
    }
}

/// What one client asks Stripe with: its account, its key, and how it wants disputes handled.
struct StripeAccess: Sendable {
    /// The client's Stripe accounts (`acct_…`, the store's app identifiers).
    let accounts: Set<String>
    let apiKey: String
    /// Revoke a purchase as soon as its payment is disputed (`--revoke-on-dispute on`).
    let revokesOnDispute: Bool

    /// The account purchases are recorded under: the one an event names, else the client's first.
    func account(named: String?) -> String? { named ?? accounts.sorted().first }

    static func of(
        client: ClientInfo?, credentials: [String: String], accounts: Set<String>
    ) throws(StoreAPIError)
        -> StripeAccess
    {
        guard let key = credentials[StripeProvider.Setting.apiKey], !key.isEmpty else {
            throw StripeAPIErrors.notConfigured("this client has no Stripe API key (--stripe-api-key)")
        }
        guard !accounts.isEmpty else {
            throw StripeAPIErrors.notConfigured("this client has no Stripe account (--stripe-account)")
        }
        return StripeAccess(
            accounts: accounts, apiKey: key,
            revokesOnDispute: client?.setting(StripeProvider.Setting.revokeOnDispute) == "on")
    }

    static func of(_ owner: ClientWithStoreCredentials) throws(StoreAPIError) -> StripeAccess {
        try of(
            client: owner.client, credentials: owner.credentials,
            accounts: Set(owner.client.appIdentifiers(StripeProvider.accountKind)))
    }
}
