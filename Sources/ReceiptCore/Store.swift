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
        /// The store returned part of the money and the buyer keeps the purchase (a web shop's
        /// partial refund): `purchase.refund` says how much; told as `transaction.refunded`.
        case partiallyRefunded
        /// The buyer disputed the payment with their bank (`dispute` says which); the purchase is
        /// revoked at once only when the dispute says so (the client's policy).
        case disputed
        /// A one-time purchase the store tells of, which no game may have claimed yet (an offer
        /// code redeemed outside the app, with no account token): recorded, known and not
        /// claimed, so a game's first claim of it is its first verification.
        case purchased
        /// Some items of a purchase that sold several were refunded or taken back, the purchase
        /// itself kept (`purchase.items` say which): only those items' grants are withdrawn.
        case itemsRefunded
    }

    public var kind: Kind
    /// The transaction the notification carries, proven and normalized.
    public var purchase: VerifiedPurchase?
    public var autoRenew: Bool?
    public var gracePeriodExpires: Date?
    /// For `consumptionRequest`: the request to answer.
    public var refundRequest: RefundRequestNews?
    /// The player the store's signed event names as the buyer (a web shop's purchase carries its
    /// player): the event is that player's claim of `purchase`, for the notification's client,
    /// and the core records it as a first verification would (or as a duplicate, or a conflict).
    public var claimedBy: String?
    /// For `disputed`: the dispute.
    public var dispute: DisputeNews?
    /// The store says this token of a purchase made outside its billing is still unreported: its
    /// report is owed at once.
    public var unreportedExternalPurchase: ExternalPurchaseToken?
    /// The buyer's consent to the app was withdrawn: every player known under its account is told.
    public var consentRevocation: ConsentRevocationNews?

    public init(
        kind: Kind, purchase: VerifiedPurchase? = nil, autoRenew: Bool? = nil, gracePeriodExpires: Date? = nil,
        refundRequest: RefundRequestNews? = nil, claimedBy: String? = nil, dispute: DisputeNews? = nil
    ) {
        self.kind = kind
        self.purchase = purchase
        self.autoRenew = autoRenew
        self.gracePeriodExpires = gracePeriodExpires
        self.refundRequest = refundRequest
        self.claimedBy = claimedBy
        self.dispute = dispute
    }
}

/// A payment the buyer disputed with their bank, as the store tells it.
public struct DisputeNews: Sendable, Equatable, Codable {
    /// The store's id for the dispute.
    public var id: String
    /// The store's reason, raw (`fraudulent`, `product_not_received`, ...).
    public var reason: String?
    /// The disputed amount in milliunits of `currency`.
    public var amountMilliunits: Int64?
    public var currency: String?
    /// Revoke the purchase now, before the dispute is decided (the client's policy).
    public var revokes: Bool

    public init(id: String, reason: String?, amountMilliunits: Int64?, currency: String?, revokes: Bool) {
        self.id = id
        self.reason = reason
        self.amountMilliunits = amountMilliunits
        self.currency = currency
        self.revokes = revokes
    }

    enum CodingKeys: String, CodingKey {
        case id, reason, currency, revokes
        case amountMilliunits = "amount_milliunits"
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
    /// The client the notification belongs to, for a store whose endpoints and event lists are
    /// per client (a web shop): a poll sets it to the owner it read for; a push to a route whose
    /// path names a client gets that client. nil: the app's owners, as for every store.
    public var clientID: String?

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

extension StoreNotification {
    /// The same notification under another deduplication key.
    package func keyed(as notificationID: String) -> StoreNotification {
        var keyed = StoreNotification(
            store: store, notificationID: notificationID, type: type, subtype: subtype, environment: environment,
            appIdentifier: appIdentifier, transactionID: transactionID, originalTransactionID: originalTransactionID,
            productID: productID, signedAt: signedAt, decodedJSON: decodedJSON)
        keyed.event = event
        keyed.rawBody = rawBody
        keyed.operatorNotice = operatorNotice
        keyed.clientID = clientID
        return keyed
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
