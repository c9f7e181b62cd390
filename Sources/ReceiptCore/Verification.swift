public import Foundation

/// What kind of product a transaction bought.
public enum ProductKind: String, Codable, Sendable, CaseIterable {
    case consumable
    case nonConsumable = "non_consumable"
    case autoRenewableSubscription = "auto_renewable_subscription"
    case nonRenewingSubscription = "non_renewing_subscription"
}

public enum Ownership: String, Codable, Sendable {
    case purchased
    case familyShared = "family_shared"
}

/// One purchase a store provider proved genuine, in store-neutral terms. What the evidence does
/// not say stays nil (some evidence says little).
public struct VerifiedPurchase: Sendable, Equatable {
    public var store: StoreID
    public var environment: StoreEnvironment
    /// The app the purchase belongs to, in the store's kind of identifier.
    public var appIdentifier: String?
    public var transactionID: String
    public var originalTransactionID: String?
    public var orderID: String?
    public var productID: String?
    public var kind: ProductKind?
    /// The store's purchase option the product was bought under (one product sold several ways:
    /// to buy, to rent, to pre-order), when the store has them.
    public var purchaseOptionID: String?
    public var quantity: Int?
    public var priceMilliunits: Int64?
    public var currency: String?
    /// What the buyer paid for this purchase in all (its quantity, discounts and tax counted) and
    /// the tax within it, in milliunits of `currency`, when a web store says: what a report of a
    /// sale made outside a store's billing declares. Nil when the store does not say.
    public var paidMilliunits: Int64?
    public var taxMilliunits: Int64?
    public var storefront: String?
    public var purchaseDate: Date?
    public var expiresDate: Date?
    public var revocationDate: Date?
    public var revocationReason: String?
    /// The store's own revocation reason code, as the store numbers them.
    public var revocationReasonCode: Int?
    public var ownership: Ownership?
    /// How much was refunded, when the store revoked the purchase and says.
    public var refund: RefundDetail?
    /// The account token the app set at purchase time, in the store's own terms.
    public var accountToken: String?
    /// A store's stable id for the buyer's account and app, when the store gives one: the same on
    /// every purchase one account makes in one app, so purchases can be grouped by buyer.
    public var appTransactionID: String?
    /// Store-specific facts the provider needs again after the record (a purchase token
    /// token and its acknowledgement state, for the acknowledgement). Never shown to clients.
    public var storeAttributes: [String: String] = [:]
    /// What the store needs to read this purchase again later, kept with its subscription (a
    /// purchase token; a user and receipt id). Opaque to the core; nil when the transaction id is
    /// enough.
    public var readBackKey: String?
    /// Whether the subscription renews at its end, when the evidence says (some stores tell it
    /// only in their notifications).
    public var autoRenews: Bool?
    /// The player the store's own record names as the buyer (a web shop's order names its
    /// player): the purchase is that player's, whoever presents it. A verification naming another
    /// player claims it for the buyer first and is answered as the conflict it is.
    public var buyer: String?
    /// The token of a store whose billing the sale went around (a link out of an app to the web
    /// shop), when the web store's record carries it: the sale is reported to that store.
    public var externalPurchaseToken: String?
    /// The offer the purchase was bought under (an offer code, a promotional offer), when the store says.
    public var offer: PurchaseOffer?
    /// The items of a purchase that sold several under one transaction, each refunded on its own.
    public var items: [PurchaseItem] = []
    /// The billing plan and commitment of a subscription paid in instalments, when the store says.
    public var commitment: BillingCommitment?

    public init(store: StoreID, environment: StoreEnvironment, transactionID: String) {
        self.store = store
        self.environment = environment
        self.transactionID = transactionID
    }
}

extension VerifiedPurchase {
    /// Dates a store may plausibly send: from 1970 to 2200. Anything else is refused before it is
    /// converted or stored (a year 300000 would overflow the conversions and the database).
    package static let plausibleDates = Date(timeIntervalSince1970: 0)...Date(timeIntervalSince1970: 7_258_118_400)

    /// The first date field outside `plausibleDates`, by name, or nil.
    package var dateOutOfRange: String? {
        var dates: [(name: String, date: Date?)] = [
            ("purchase date", purchaseDate), ("expiry date", expiresDate), ("revocation date", revocationDate),
            ("commitment end", commitment?.expiresDate),
        ]
        for item in items {
            dates.append(("item revocation date", item.revocationDate))
            dates += item.refunds.map { ("item refund date", $0.date) }
        }
        for (name, date) in dates {
            if let date, !Self.plausibleDates.contains(date) { return name }
        }
        return nil
    }
}

/// What the calling client accepts, handed to a store provider with the evidence.
public struct VerificationContext: Sendable {
    /// The apps the client registered, in this store's kind of identifier.
    public var appIdentifiers: Set<String>
    /// The native body's fields this store declared (`StoreDeclaration.evidenceFields`), checked.
    public var evidenceFields: [String: String] = [:]
    public var environments: Set<StoreEnvironment>
    /// The product the caller asks about, if it says: evidence holding many purchases (an app
    /// receipt) then needs only that product's purchases proven.
    public var productID: String?
    /// The one transaction the caller names (`VerificationRequest.transactionID`): evidence holding
    /// many purchases asks the store about that one first.
    public var transactionID: String?
    /// When the request gives up; a provider makes no further store calls after it (cancellation
    /// of the calling task means the same).
    public var deadline: ContinuousClock.Instant?
    /// The calling client (its plugin settings included), when there is one.
    public var client: ClientInfo?
    /// The client's secret settings for this store (names prefixed `<store>.`), opened only for
    /// the provider that needs them (a per-client store credential).
    public var credentials: [String: String]
    /// What the evidence is, as the caller said (the pipeline only passes a kind the provider
    /// declares in `StoreDeclaration.evidenceKinds`).
    public var evidenceKind: EvidenceKind
    /// The order the evidence names, for a store whose orders the service starts
    /// (`OrderStarting`): found by the service for the calling client before the store is asked.
    public var order: OrderRecord?

    package init(
        appIdentifiers: Set<String>, environments: Set<StoreEnvironment>, productID: String? = nil,
        deadline: ContinuousClock.Instant? = nil, client: ClientInfo? = nil, credentials: [String: String] = [:],
        evidenceKind: EvidenceKind = .detected
    ) {
        self.appIdentifiers = appIdentifiers
        self.environments = environments
        self.productID = productID
        self.deadline = deadline
        self.client = client
        self.credentials = credentials
        self.evidenceKind = evidenceKind
    }
}

/// Why evidence was not accepted: a stable shared code, the rule that failed, and whether trying
/// again later may succeed (only for store or network trouble, never for a forgery).
public struct StoreVerificationError: Error, Sendable, CustomStringConvertible {
    public let code: ErrorCode
    public let reason: String
    public let message: String
    public let isRetryable: Bool

    public init(code: ErrorCode, reason: String, message: String, isRetryable: Bool = false) {
        self.code = code
        self.reason = reason
        self.message = message
        self.isRetryable = isRetryable
    }

    public var description: String { "\(code.rawValue) (\(reason)): \(message)" }
}
