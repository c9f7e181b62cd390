public import Foundation

/// Where a scheduled poll stopped, kept by the core across restarts and processes. A poller owns
/// the keys it uses (prefix them with its name) and the meaning of the values.
public protocol PollCursorStore: Sendable {
    func cursor(_ key: String) async throws -> String?
    /// Saves where the poll stands. Throws if this process no longer holds the poll's lease (it
    /// took too long and another process took over): the poll must stop then.
    func setCursor(_ key: String, to value: String) async throws
}

/// One run of a poll, as the poller sees it: its cursors, where an operator asked it to start,
/// and what it tells the run's record.
public protocol PollRun: PollCursorStore {
    /// Set when an operator started the run by hand (`receiptgate reconcile --since`): read from
    /// here. Such a run keeps its cursors to itself, so the schedule's stay where they were.
    var since: Date? { get }
    /// Counts one page read from the store.
    func pageRead()
    /// Counts one subscription read back from the store.
    func subscriptionReread()
}

/// A store provider's scheduled work (reading a store's list of voided purchases). The core runs `poll` every
/// `interval`, in one process at a time across the cluster, and records what it hands over
/// exactly as it records push notifications: deduplicated on the notification id, each event
/// applied to the ledger with the same webhooks and refund callbacks.
public protocol StorePolling: Sendable {
    /// Names the poll's lease and cursors, e.g. `<store>.voided_purchases`.
    var pollName: String { get }
    var interval: Duration { get }
    /// One run over `owners` (every enabled client with an app of this store, with its secret
    /// settings). Hands each page's notifications to `record` before moving its cursor, so a crash
    /// repeats a page (deduplicated) rather than losing it.
    func poll(
        owners: [ClientWithStoreCredentials], run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void) async throws
}

/// A poll's failure that says when to ask the store again (a `429` with `Retry-After`): the next
/// run waits at least that long.
public protocol StoreAskedToWait: Error {
    var retryAfter: Duration? { get }
}

/// A subscription whose period (and grace) ended with no news from its store: no renewal, no
/// expiry, no billing issue. The core picks them, oldest first, for the store to be asked.
public struct QuietSubscription: Sendable, Equatable {
    public let store: StoreID
    public let environment: StoreEnvironment
    public let originalTransactionID: String
    public let latestTransactionID: String?
    public let productID: String?
    public let expiresDate: Date?
    /// The app its latest period was bought in, where the ledger knows it.
    public let appIdentifier: String?
    /// What the store needs to read it again (`VerifiedPurchase.readBackKey`), if it was recorded.
    public let readBackKey: String?
    public let clientID: String

    public init(
        store: StoreID, environment: StoreEnvironment, originalTransactionID: String, latestTransactionID: String?,
        productID: String?, expiresDate: Date?, appIdentifier: String?, readBackKey: String?, clientID: String
    ) {
        self.store = store
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.latestTransactionID = latestTransactionID
        self.productID = productID
        self.expiresDate = expiresDate
        self.appIdentifier = appIdentifier
        self.readBackKey = readBackKey
        self.clientID = clientID
    }
}

/// A store provider that can read one subscription back from its store (the store's own
/// subscription-status or purchase API).
public protocol SubscriptionReading: Sendable {
    /// What the store says of `subscription` now, as a notification the core records as it
    /// records a push (deduplicated on its id: the same state read twice is applied once), or nil
    /// when the store cannot say (it does not know the purchase; the ledger lacks its read-back
    /// key). Throws `SubscriptionReadFailed` when asking failed: the run stops there, and the
    /// subscription is asked again by the next.
    func readBack(
        _ subscription: QuietSubscription, owner: ClientWithStoreCredentials
    ) async throws -> StoreNotification?
}

/// Asking a store about a subscription failed: rate limited, the store's error, or a refused key.
public struct SubscriptionReadFailed: StoreAskedToWait, CustomStringConvertible {
    public let message: String
    public let retryAfter: Duration?
    /// The store itself is in trouble (rate limit, outage): the run stops. Otherwise the trouble is
    /// the client's (a refused key, a missing secret): that client is skipped for the run.
    public let storeWide: Bool

    public init(_ message: String, retryAfter: Duration? = nil, storeWide: Bool) {
        self.message = message
        self.retryAfter = retryAfter
        self.storeWide = storeWide
    }

    public var description: String { message }
}
