public import Foundation

/// A store that proves evidence genuine (network only, never the database).
public protocol StoreProvider: Sendable {
    var store: StoreID { get }
    /// Proves `evidence` genuine and returns every purchase it holds (usually one; an app receipt
    /// may hold several). Throws `StoreVerificationError`.
    func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase]
}

/// A store's server-to-server push as it reached us: the body and the headers (a push may be
/// authenticated by a bearer token in a header, or by a signed body), plus the query.
public struct NotificationRequest: Sendable {
    public let body: Data
    /// Header names lower-cased.
    public let headers: [String: String]
    public let query: [String: String]
    /// The client that registered an app, with its secret settings for this store: a store whose
    /// notifications carry no purchase state fetches it with that client's credentials.
    public let owner: @Sendable (_ appIdentifier: String) async throws -> ClientWithStoreCredentials?
    /// The client whose plain setting `name` (one of this store's own, `<store>.…`) has `value`
    /// as its first value, among the enabled clients that registered an app of this store (the
    /// oldest first), with its secret settings for this store. For a store whose notifications
    /// name its own account id rather than an app identifier: the match is found without opening
    /// any other client's secrets, and a value no client has costs one lookup.
    public let ownerBySetting: @Sendable (_ name: String, _ value: String) async throws -> ClientWithStoreCredentials?
    /// The client the route's path names (`{client_id}`), for a store whose endpoint belongs to
    /// one client (its signing secret is that endpoint's): found by the core before the provider
    /// is called (enabled, with an app of this store), with its secret settings for this store.
    /// nil on a route whose path names no client.
    public let pathClient: ClientWithStoreCredentials?
    /// Whether the path's client knows the player: an account linked through it, or a purchase
    /// claimed for it. False on a route whose path names no client.
    public let knowsPlayer: @Sendable (_ playerID: String) async throws -> Bool

    package init(
        body: Data, headers: [String: String] = [:], query: [String: String] = [:],
        owner: @escaping @Sendable (_ appIdentifier: String) async throws -> ClientWithStoreCredentials? = { _ in nil },
        ownerBySetting:
            @escaping @Sendable (_ name: String, _ value: String) async throws -> ClientWithStoreCredentials? = {
                _, _ in nil
            },
        pathClient: ClientWithStoreCredentials? = nil,
        knowsPlayer: @escaping @Sendable (_ playerID: String) async throws -> Bool = { _ in false }
    ) {
        self.body = body
        self.headers = headers
        self.query = query
        self.owner = owner
        self.ownerBySetting = ownerBySetting
        self.pathClient = pathClient
        self.knowsPlayer = knowsPlayer
    }
}

/// A client as a store provider sees it outside a request: its settings and its secret settings
/// for that store (names prefixed `<store>.`).
public struct ClientWithStoreCredentials: Sendable {
    public let client: ClientInfo
    public let credentials: [String: String]

    package init(client: ClientInfo, credentials: [String: String]) {
        self.client = client
        self.credentials = credentials
    }
}

/// A store provider that receives server-to-server notifications.
public protocol NotificationReceiving: Sendable {
    /// Where the store posts, e.g. `/v1/notifications/app-store`. A path ending in
    /// `/{client_id}` belongs to one client (`NotificationRequest.pathClient`): the core answers
    /// 404 for an id naming no enabled client with an app of this store, before the provider is
    /// called.
    var notificationPath: String { get }
    /// Proves the request genuine and decodes it. Throws `NotificationRejection`.
    func receiveNotification(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> StoreNotification
    /// Every notification one request carries (an order of several items: one per item, each
    /// with an id of its own). By default the one `receiveNotification` returns.
    func receiveNotifications(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> [StoreNotification]
    /// The store's own answer for an outcome, where its sender reads the answer (a status or a
    /// body its retries depend on); nil answers in the core's JSON.
    func answer(to outcome: NotificationOutcome) -> NotificationAnswer?
}

extension NotificationReceiving {
    public func receiveNotifications(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> [StoreNotification] {
        [try await receiveNotification(request, registered: registered)]
    }

    public func answer(to outcome: NotificationOutcome) -> NotificationAnswer? { nil }
}

/// How the core ended a notification request, for a store that answers in its own terms.
public enum NotificationOutcome: Sendable {
    /// Recorded (every notification of the request was already on record: `duplicate`).
    case accepted(duplicate: Bool)
    /// The provider refused it, or found nothing to record (`NotificationRejection.Kind.ignored`).
    case refused(NotificationRejection)
    /// The path's client id names no enabled client with an app of this store.
    case unknownClient
    /// It could not be recorded now (the database): the store should send it again.
    case unavailable
}

/// A store's own answer to a notification request.
public struct NotificationAnswer: Sendable, Equatable {
    public var status: Int
    /// Empty for none.
    public var body: Data
    public var contentType: String?

    public init(status: Int, body: Data = Data(), contentType: String? = nil) {
        self.status = status
        self.body = body
        self.contentType = contentType
    }
}

/// What a store says about a customer-visible order id (the id on the customer's invoice).
public struct StoreOrder: Sendable {
    public struct Entry: Sendable {
        public var transactionID: String?
        public var productID: String?
        /// The store returned signed data that could not be proven and decoded.
        public var decodeFailed: Bool

        public init(transactionID: String?, productID: String?, decodeFailed: Bool) {
            self.transactionID = transactionID
            self.productID = productID
            self.decodeFailed = decodeFailed
        }
    }

    public var found: Bool
    public var environment: StoreEnvironment?
    public var entries: [Entry]

    public init(found: Bool, environment: StoreEnvironment?, entries: [Entry]) {
        self.found = found
        self.environment = environment
        self.entries = entries
    }
}

/// A store provider that can look up order ids.
public protocol OrderLookingUp: Sendable {
    /// Throws `StoreVerificationError` (VERIFIER_ERROR when the store cannot be asked).
    func lookUpOrder(_ orderID: String, appIdentifiers: Set<String>) async throws -> StoreOrder
}

/// A message to a store, owed after a purchase is recorded (a store may refund purchases nobody
/// acknowledged within three days). Queued in the outbox with the record, sent by the worker.
public struct StoreAcknowledgement: Codable, Sendable, Equatable {
    public var store: StoreID
    public var clientID: String
    /// What the store needs to identify the purchase, as the provider chose to write it.
    public var parameters: [String: String]

    public init(store: StoreID, clientID: String, parameters: [String: String]) {
        self.store = store
        self.clientID = clientID
        self.parameters = parameters
    }
}

/// A store provider whose purchases must be acknowledged after they are recorded.
public protocol PurchaseAcknowledging: Sendable {
    /// What to queue for this freshly recorded purchase, or nil if it needs nothing.
    func acknowledgement(for purchase: VerifiedPurchase, client: ClientInfo) -> StoreAcknowledgement?
    /// Sends it with the client's secret settings for this store (`credentials`, possibly empty).
    /// Throws `StoreVerificationError`; the outbox tries again later.
    func acknowledge(_ acknowledgement: StoreAcknowledgement, credentials: [String: String]) async throws
}

/// One store as the service knows it: what it can do, declared, never found by downcasts.
public struct StoreRegistration: Sendable {
    public let store: StoreID
    /// What is written around the store (settings, identifiers, evidence fields, platforms).
    public let declaration: StoreDeclaration
    public let verifier: any StoreProvider
    public let notifications: (any NotificationReceiving)?
    public let orderLookup: (any OrderLookingUp)?
    public let acknowledgement: (any PurchaseAcknowledging)?
    /// Work the service runs on a schedule, one process at a time across the cluster.
    public let poller: (any StorePolling)?
    /// Reads a subscription back from the store when its period ended with no news.
    public let subscriptionReader: (any SubscriptionReading)?
    /// Answers the store's refund requests.
    public let refundAnswering: (any RefundRequestAnswering)?
    /// Tells the store which account a purchase linked after the sale belongs to.
    public let accountTokenSetting: (any AccountTokenSetting)?
    /// Starts orders (`POST /v1/orders`), for a store whose purchases the service runs.
    public let orderStarter: (any OrderStarting)?
    /// Proves players' store accounts from tickets (`POST /v1/{store}/authenticate`).
    public let accountAuthenticator: (any AccountAuthenticating)?
    /// Asks the store to refund an order, for the operator (the admin API, the console).
    public let orderRefunder: (any OrderRefunding)?
    /// Takes reports of purchases made outside the store's billing (tokens, sales, refunds).
    public let externalPurchaseReporting: (any ExternalPurchaseReporting)?
    /// Revokes, cancels or defers subscriptions, for the operator (the admin API, the console).
    public let subscriptionManager: (any SubscriptionManaging)?
    /// Proves that a buyer owns the app itself (`POST /v1/verify`, `GET /v1/app-transactions/…`).
    public let appOwnership: (any AppOwnershipProving)?

    public init(
        _ declaration: StoreDeclaration, verifier: any StoreProvider, notifications: (any NotificationReceiving)? = nil,
        orderLookup: (any OrderLookingUp)? = nil, acknowledgement: (any PurchaseAcknowledging)? = nil,
        poller: (any StorePolling)? = nil, subscriptionReader: (any SubscriptionReading)? = nil,
        refundAnswering: (any RefundRequestAnswering)? = nil, accountTokenSetting: (any AccountTokenSetting)? = nil,
        orderStarter: (any OrderStarting)? = nil, accountAuthenticator: (any AccountAuthenticating)? = nil,
        orderRefunder: (any OrderRefunding)? = nil,
        externalPurchaseReporting: (any ExternalPurchaseReporting)? = nil,
        subscriptionManager: (any SubscriptionManaging)? = nil,
        appOwnership: (any AppOwnershipProving)? = nil
    ) {
        precondition(declaration.store == verifier.store, "a registration's declaration and verifier name one store")
        self.store = verifier.store
        self.declaration = declaration
        self.verifier = verifier
        self.notifications = notifications
        self.orderLookup = orderLookup
        self.acknowledgement = acknowledgement
        self.poller = poller
        self.subscriptionReader = subscriptionReader
        self.refundAnswering = refundAnswering
        self.accountTokenSetting = accountTokenSetting
        self.orderStarter = orderStarter
        self.accountAuthenticator = accountAuthenticator
        self.orderRefunder = orderRefunder
        self.externalPurchaseReporting = externalPurchaseReporting
        self.subscriptionManager = subscriptionManager
        self.appOwnership = appOwnership
    }
}
