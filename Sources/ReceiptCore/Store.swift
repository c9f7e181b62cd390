public import Foundation

/// Which store a piece of evidence or a notification belongs to (each provider defines its own).
public struct StoreID: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// What the registered clients accept, across all of them: a store notification is for the app,
/// not for one client, so it is checked against every app some client registered.
public struct RegisteredApps: Sendable, Equatable {
    /// The store's own kind of identifier (its `AppIdentifierKind`), from every enabled client.
    public var appIdentifiers: Set<String>
    public var environments: Set<StoreEnvironment>

    package init(appIdentifiers: Set<String> = [], environments: Set<StoreEnvironment> = []) {
        self.appIdentifiers = appIdentifiers
        self.environments = environments
    }
}

/// What a store notification means for the ledger, in store-neutral terms.
public struct StoreEvent: Sendable {
    public enum Kind: String, Sendable {
        case refunded, refundReversed, revoked, renewed, subscribed, expired, billingIssue, gracePeriodExpired
        case renewalStatusChanged, oneTimeCharge, test, other
        /// The store asks the developer before it decides a refund (`refundRequest` says which).
        case consumptionRequest
        /// The store decided a refund request against the customer.
        case refundDeclined
    }

    public var kind: Kind
    /// The transaction the notification carries, proven and normalized.
    public var purchase: VerifiedPurchase?
    public var autoRenew: Bool?
    public var gracePeriodExpires: Date?
    /// For `consumptionRequest`: the request to answer.
    public var refundRequest: RefundRequestNews?

    public init(
        kind: Kind, purchase: VerifiedPurchase? = nil, autoRenew: Bool? = nil, gracePeriodExpires: Date? = nil,
        refundRequest: RefundRequestNews? = nil
    ) {
        self.kind = kind
        self.purchase = purchase
        self.autoRenew = autoRenew
        self.gracePeriodExpires = gracePeriodExpires
        self.refundRequest = refundRequest
    }
}

/// A store's server-to-server notification, proven genuine and decoded into what the core needs.
public struct StoreNotification: Sendable {
    public let store: StoreID
    /// The store's own id for the notification; the deduplication key.
    public let notificationID: String
    /// The store's event name, verbatim (`REFUND`, `DID_RENEW`, ...).
    public let type: String
    public let subtype: String?
    public let environment: StoreEnvironment?
    public let appIdentifier: String?
    public let transactionID: String?
    public let originalTransactionID: String?
    public let productID: String?
    public let signedAt: Date?
    /// The decoded notification, nested signed data decoded too, as JSON (kept for support).
    public let decodedJSON: Data
    public var event: StoreEvent = StoreEvent(kind: .other)
    /// What the store sent, when a poll read it back (a notification-history record's signed
    /// envelope): kept as the raw body, so a polled row holds the store's proof as a pushed one
    /// does. nil: the decoded JSON is kept.
    public var rawBody: Data?
    /// Set when the operator has to act on this notification (a store asking for its endpoint to
    /// be confirmed): the core logs it at warning level, since nobody reads info lines for a task.
    public var operatorNotice: OperatorNotice?

    public init(
        store: StoreID, notificationID: String, type: String, subtype: String?, environment: StoreEnvironment?,
        appIdentifier: String?, transactionID: String?, originalTransactionID: String?, productID: String?,
        signedAt: Date?, decodedJSON: Data
    ) {
        self.store = store
        self.notificationID = notificationID
        self.type = type
        self.subtype = subtype
        self.environment = environment
        self.appIdentifier = appIdentifier
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.signedAt = signedAt
        self.decodedJSON = decodedJSON
    }
}

/// A line for the operator about a notification: what to do, and the values needed to do it
/// (they must be fit for a log: nothing that grants access on its own).
public struct OperatorNotice: Sendable {
    public let message: String
    public let fields: [String: String]

    public init(message: String, fields: [String: String]) {
        self.message = message
        self.fields = fields
    }
}

/// Why a notification was not accepted. `forged` changes nothing and is answered 401; a
/// retryable failure is answered 503 so the store sends it again; `ignored` is answered 200 and
/// recorded nowhere.
public struct NotificationRejection: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        case malformed, forged, retryable
        /// Nothing to record: the store's own record (read again) holds nothing the notification
        /// could be about, e.g. a purchase token it does not know, named by an unsigned
        /// notification anyone may send. Answered 200 so a store that sent it stops, and kept
        /// nowhere, so a sender of made-up ones grows nothing.
        case ignored
    }
    public let kind: Kind
    public let reason: String
    public let message: String

    public init(_ kind: Kind, reason: String, message: String) {
        self.kind = kind
        self.reason = reason
        self.message = message
    }

    public var description: String { "\(reason): \(message)" }
}
