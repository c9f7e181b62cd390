public import Foundation

/// Where a recorded transaction stands now. Only `active` is an instruction to deliver.
public enum TransactionState: String, Codable, Sendable, CaseIterable {
    case active
    case refunded
    case revoked
    case expired
}

/// How the account token the caller sent compares with the one the evidence carries.
public enum AccountMatch: String, Codable, Sendable {
    case match
    case mismatch
    /// Either side is missing: nothing to compare.
    case notComparable = "not_comparable"

    /// Compared, never ignored; case-insensitive (UUIDs arrive in either case).
    package static func compare(requested: String?, evidence: String?) -> AccountMatch {
        guard let requested, !requested.isEmpty, let evidence, !evidence.isEmpty else { return .notComparable }
        return requested.lowercased() == evidence.lowercased() ? .match : .mismatch
    }
}

/// Where an auto-renewable subscription stands, as the ledger follows it.
public enum SubscriptionStatus: String, Codable, Sendable, CaseIterable {
    case active
    case gracePeriod = "grace_period"
    case billingRetry = "billing_retry"
    case expired
    case refunded
    case revoked
}

/// A subscription's current state: the latest period the ledger knows, which may be newer than
/// the evidence the caller sent (a renewal learned from a store notification).
public struct SubscriptionState: Sendable, Equatable {
    public var store: StoreID
    public var environment: StoreEnvironment
    public var originalTransactionID: String
    public var productID: String?
    public var status: SubscriptionStatus
    public var expiresDate: Date?
    public var gracePeriodExpiresDate: Date?
    public var autoRenew: Bool?
    public var revocationDate: Date?
    public var latestTransactionID: String?

    public init(
        store: StoreID, environment: StoreEnvironment, originalTransactionID: String, status: SubscriptionStatus
    ) {
        self.store = store
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.status = status
    }
}

/// One transaction as the ledger recorded it: the one model every API encodes in its own shape.
public struct TransactionRecord: Sendable, Equatable {
    /// The management id support quotes.
    public var managementID: Int64
    public var store: StoreID
    public var environment: StoreEnvironment
    public var transactionID: String
    public var originalTransactionID: String?
    public var orderID: String?
    public var productID: String?
    public var kind: ProductKind?
    /// The purchase option the product was bought under, where the store has them.
    public var purchaseOptionID: String?
    public var quantity: Int?
    public var priceMilliunits: Int64?
    public var currency: String?
    public var storefront: String?
    public var purchaseDate: Date?
    public var expiresDate: Date?
    public var revocationDate: Date?
    public var revocationReason: String?
    public var ownership: Ownership?
    /// The account token the evidence carried, in the store's own terms.
    public var accountToken: String?
    /// A store's stable id for the buyer's account and app, when the store gives one.
    public var appTransactionID: String?
    /// The app the purchase belongs to, in the store's kind of identifier.
    public var appIdentifier: String?
    /// How much was refunded, once the store revoked it and said.
    public var refund: RefundDetail?
    /// The offer it was bought under, the items it sold, its billing commitment (`VerifiedPurchase`'s).
    public var offer: PurchaseOffer?
    public var items: [PurchaseItem] = []
    public var commitment: BillingCommitment?
    /// The first claim by a game; nil while the purchase is only known from the store.
    public var claim: Claim?
    public var state: TransactionState
    /// The client that recorded it, and that client's game.
    public var clientID: String
    public var gameID: Int64?
    package var firstVerifiedAt: Date

    package init(
        managementID: Int64, store: StoreID, environment: StoreEnvironment, transactionID: String,
        state: TransactionState,
        clientID: String, firstVerifiedAt: Date
    ) {
        self.managementID = managementID
        self.store = store
        self.environment = environment
        self.transactionID = transactionID
        self.state = state
        self.clientID = clientID
        self.firstVerifiedAt = firstVerifiedAt
    }

    /// The key of the purchase across renewals and restores: the original transaction.
    public var originalOrSelf: String { originalTransactionID ?? transactionID }
}

/// What one verification came to: the recorded transaction, whether it was recorded before,
/// how the account tokens compared, and the subscription's current state when there is one.
public struct VerificationOutcome: Sendable {
    public var transaction: TransactionRecord
    /// Claimed before: not this claim's to deliver.
    public var duplicate: Bool
    public var accountMatch: AccountMatch
    public var subscription: SubscriptionState?
    /// Set when the purchase was first claimed for another player of the game.
    public var firstClaimedBy: Claimant?

    package init(
        transaction: TransactionRecord, duplicate: Bool, accountMatch: AccountMatch, subscription: SubscriptionState?,
        firstClaimedBy: Claimant? = nil
    ) {
        self.transaction = transaction
        self.duplicate = duplicate
        self.accountMatch = accountMatch
        self.subscription = subscription
        self.firstClaimedBy = firstClaimedBy
    }
}

/// One verification request, whatever API it came through (native or a dialect).
public struct VerificationRequest: Sendable {
    public var store: StoreID
    public var evidence: String
    public var productID: String?
    public var accountToken: String?
    public var playerID: String?
    public var characterID: String?
    public var serverID: String?
    /// The game build that sent it, kept with the claim.
    public var gameVersion: String?
    /// For stores whose evidence may not name its app (a bare purchase token).
    public var appIdentifier: String?
    /// The one transaction the caller means, when evidence may hold many (an app receipt):
    /// that one is chosen (matched by transaction or original transaction id) or the evidence is refused.
    public var transactionID: String?
    /// The fields beside the evidence its store declared (`StoreDeclaration.evidenceFields`).
    public var evidenceFields: [String: String] = [:]
    /// What the evidence is. Only a caller that means it asks for anything but `.detected`.
    public var evidenceKind: EvidenceKind = .detected
    public var requestID: String

    public init(store: StoreID, evidence: String, requestID: String) {
        self.store = store
        self.evidence = evidence
        self.requestID = requestID
    }
}

/// What a request's evidence is. Signed evidence (a JWS, a receipt, a purchase token) is
/// detected by its shape; a bare store transaction id is never guessed from the shape, only taken
/// when the caller asks for it: an id is no secret (it is on the customer's invoice), so an API
/// that did not mean to accept one must not redeem one (anyone who learned another player's id
/// could claim the purchase).
public enum EvidenceKind: String, Sendable, Hashable {
    case detected
    /// A store transaction id, proven by asking the store for the signed transaction.
    case transactionID = "transaction_id"
}

/// A purchase proven genuine and cross-checked for one request, not yet recorded.
public struct ProvenPurchase: Sendable {
    public let purchase: VerifiedPurchase
    public let request: VerificationRequest
    public let accountMatch: AccountMatch
    /// SHA-256 (hex) of the evidence, kept on the attempt row instead of the evidence itself.
    package let evidenceDigest: String
    /// Evidence holding several purchases the request matches (an app receipt with unfinished
    /// purchases of one product): all of them, oldest first, each cross-checked like `purchase`.
    /// The claim takes the oldest not yet claimed. Empty when the evidence names one.
    package var claimOrder: [VerifiedPurchase] = []
    /// The other purchases of one order the store proved together with `purchase` (the other items
    /// of an order the service started), each its buyer's: recorded as the buyer's claims with it.
    package var boughtWith: [VerifiedPurchase] = []

    package init(
        purchase: VerifiedPurchase, request: VerificationRequest, accountMatch: AccountMatch, evidenceDigest: String
    ) {
        self.purchase = purchase
        self.request = request
        self.accountMatch = accountMatch
        self.evidenceDigest = evidenceDigest
    }

    /// Who this request claims the purchase for.
    public var claimant: Claimant {
        Claimant(
            playerID: request.playerID, characterID: request.characterID, serverID: request.serverID,
            gameVersion: request.gameVersion)
    }

    /// The same request about another purchase of its evidence.
    package func about(_ other: VerifiedPurchase) -> ProvenPurchase {
        ProvenPurchase(
            purchase: other, request: request,
            accountMatch: AccountMatch.compare(requested: request.accountToken, evidence: other.accountToken),
            evidenceDigest: evidenceDigest)
    }
}

/// What the ledger knows of a transaction, for the client asking.
public struct LedgerPresence: Sendable {
    public var found: Bool
    public var managementID: Int64?
    public var state: TransactionState?
    public var recordedForThisGame: Bool
    /// The latest verification of this transaction by the client's game that was refused after
    /// its store had proved it (wrong product, another game's purchase...), as it was answered.
    /// A refusal made before the store named a transaction (a forged receipt) is on no transaction.
    public var lastRefusal: StoreVerificationError?

    package init(
        found: Bool, managementID: Int64?, state: TransactionState?, recordedForThisGame: Bool,
        lastRefusal: StoreVerificationError? = nil
    ) {
        self.found = found
        self.managementID = managementID
        self.state = state
        self.recordedForThisGame = recordedForThisGame
        self.lastRefusal = lastRefusal
    }
}

extension Date {
    /// Milliseconds since 1970, as APIs show times. Saturates instead of trapping: dates are
    /// range-checked where they arrive, this is the backstop.
    public var epochMilliseconds: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite else { return 0 }
        return Int64(exactly: milliseconds) ?? (milliseconds > 0 ? Int64.max : Int64.min)
    }
}
