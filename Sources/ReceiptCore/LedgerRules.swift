public import Foundation

/// The ledger's rules, written once: what state a purchase is in, how a recorded transaction's
/// state moves when the store says something new, and which transactions a client may see.
/// The service calls them (in Swift, or through SQL generated from them where a statement must
/// decide), and so does the plugin tests' fake core, so a dialect test checks the real product.
public enum LedgerRules {
    /// The state a proven purchase is in at `now`: revoked or refunded once the store revoked it
    /// (a refund when the store gave a reason; a revocation without one, such as Family Sharing
    /// withdrawn), expired once its period is over, otherwise active.
    public static func state(of purchase: VerifiedPurchase, at now: Date) -> TransactionState {
        if purchase.revocationDate != nil { return purchase.revocationReason == nil ? .revoked : .refunded }
        if let expires = purchase.expiresDate, expires < now { return .expired }
        return .active
    }

    /// The state a purchase is in once the store reversed its refund or revocation: whatever its
    /// dates alone say (active, or expired when its period is over).
    package static func stateAfterReversal(of purchase: VerifiedPurchase, at now: Date) -> TransactionState {
        var reinstated = purchase
        reinstated.revocationDate = nil
        reinstated.revocationReason = nil
        return state(of: reinstated, at: now)
    }

    /// The state a recorded transaction moves to on `news`.
    public static func state(of recorded: TransactionState, after news: LedgerNews) -> TransactionState {
        switch news {
        case .evidence(let proven):
            // Evidence may be old (a client resending what it kept): it can tell an active row that
            // the purchase ended, never bring back one the ledger already saw end.
            return recorded == .active ? proven : recorded
        case .storeEvent(let latest):
            // Money returned is not taken back by the period running out, a renewal or a billing
            // retry: only the store's explicit reversal undoes a refund or revocation.
            return recorded.isWithdrawn && !latest.isWithdrawn ? recorded : latest
        case .reversal(let reinstated):
            return reinstated
        case .partialRefund:
            // Part of the money back, the purchase kept: the row keeps whatever state it is in.
            return recorded
        }
    }

    /// Which transactions a client may see: those it recorded, and those of every client of its
    /// game. A client without a game sees only its own.
    package static func isVisible(ownerClientID: String, ownerGameID: Int64?, to client: ClientInfo) -> Bool {
        ownerClientID == client.clientID || (ownerGameID != nil && ownerGameID == client.gameID)
    }

    package static func isVisible(_ record: TransactionRecord, to client: ClientInfo) -> Bool {
        isVisible(ownerClientID: record.clientID, ownerGameID: record.gameID, to: client)
    }
}

/// Something the store said about a transaction already on record.
public enum LedgerNews: Sendable, Equatable {
    /// A caller presented evidence again; its state as `LedgerRules.state(of:at:)` reads it.
    case evidence(TransactionState)
    /// A store notification (refund, renewal, expiry...): the store's latest word.
    case storeEvent(TransactionState)
    /// The store reversed a refund or revocation; the state the purchase is back in.
    case reversal(TransactionState)
    /// The store returned part of the money and the purchase is kept (a web shop's partial
    /// refund): the row keeps its state and records the refund; a new row takes `state`.
    case partialRefund(TransactionState)

    /// The state the news itself carries: what a transaction not yet on record is written with.
    public var state: TransactionState {
        switch self {
        case .evidence(let state), .storeEvent(let state), .reversal(let state), .partialRefund(let state): state
        }
    }
}

extension TransactionState {
    /// Refunded or revoked: the money or the entitlement was taken back.
    public var isWithdrawn: Bool { self == .refunded || self == .revoked }
}

extension SubscriptionStatus {
    /// A subscription's status as one transaction's state tells it (its latest period, when the
    /// ledger knows nothing more: no grace period, no billing retry).
    public init(_ state: TransactionState) {
        switch state {
        case .active: self = .active
        case .refunded: self = .refunded
        case .revoked: self = .revoked
        case .expired: self = .expired
        }
    }
}

extension TransactionRecord {
    /// A new record of `purchase`, as the ledger writes it for the client `clientID` of game `gameID`.
    package init(
        recording purchase: VerifiedPurchase, managementID: Int64, state: TransactionState, clientID: String,
        gameID: Int64?,
        firstVerifiedAt: Date
    ) {
        self.init(
            managementID: managementID, store: purchase.store, environment: purchase.environment,
            transactionID: purchase.transactionID,
            state: state, clientID: clientID, firstVerifiedAt: firstVerifiedAt)
        originalTransactionID = purchase.originalTransactionID
        orderID = purchase.orderID
        productID = purchase.productID
        kind = purchase.kind
        purchaseOptionID = purchase.purchaseOptionID
        quantity = purchase.quantity
        priceMilliunits = purchase.priceMilliunits
        currency = purchase.currency
        storefront = purchase.storefront
        purchaseDate = purchase.purchaseDate
        expiresDate = purchase.expiresDate
        revocationDate = purchase.revocationDate
        revocationReason = purchase.revocationReason
        ownership = purchase.ownership
        accountToken = purchase.accountToken
        appTransactionID = purchase.appTransactionID
        appIdentifier = purchase.appIdentifier
        offer = purchase.offer
        items = purchase.items
        commitment = purchase.commitment
        refund = purchase.revocationDate == nil ? nil : purchase.refund ?? RefundDetail()
        self.gameID = gameID
    }

    /// This record after a caller presented `purchase` again, or nil when the record stays as it
    /// is. Dates the evidence lacks are kept from the record.
    public func updated(byEvidence purchase: VerifiedPurchase, at now: Date) -> TransactionRecord? {
        let next = LedgerRules.state(of: state, after: .evidence(LedgerRules.state(of: purchase, at: now)))
        guard next != state else { return nil }
        var updated = self
        updated.state = next
        updated.revocationDate = purchase.revocationDate ?? revocationDate
        updated.revocationReason = purchase.revocationReason ?? revocationReason
        updated.refund = purchase.refund ?? refund
        updated.expiresDate = purchase.expiresDate ?? expiresDate
        return updated
    }
}
