import ReceiptCore

/// What a first claim owes beyond its transaction and attempt rows, decided in one place: the
/// record writes exactly these, and the group commit (which writes rows and the game server's
/// messages only) takes a verification only when it owes nothing else, so an effect added here
/// reaches both paths.
struct FirstClaimEffects: OptionSet, Sendable {
    let rawValue: Int

    /// `transaction.verified` to the client's webhook.
    static let webhook = FirstClaimEffects(rawValue: 1 << 0)
    /// `entitlement.delivery` to the client's delivery URL.
    static let delivery = FirstClaimEffects(rawValue: 1 << 1)
    /// The subscription row the purchase starts or moves.
    static let subscriptionState = FirstClaimEffects(rawValue: 1 << 2)
    /// The store's acknowledgement through the outbox.
    static let storeAcknowledgement = FirstClaimEffects(rawValue: 1 << 3)
    /// What the player owns, when some catalog of the game maps the product.
    static let entitlements = FirstClaimEffects(rawValue: 1 << 4)

    /// What the first claim of `proven`, in `state`, owes for `client`: a delivery only for a
    /// purchase that is active and whose account does not contradict the caller's.
    static func owed(
        by proven: ProvenPurchase, state: TransactionState, client: Client, acknowledges: Bool
    ) -> FirstClaimEffects {
        var owed: FirstClaimEffects = []
        if client.webhookURL != nil { owed.insert(.webhook) }
        if client.deliveryURL != nil, state == .active, proven.accountMatch != .mismatch { owed.insert(.delivery) }
        if proven.purchase.kind == .autoRenewableSubscription { owed.insert(.subscriptionState) }
        if acknowledges { owed.insert(.storeAcknowledgement) }
        let purchase = proven.purchase
        if client.mayChangeEntitlements(
            store: purchase.store, product: purchase.productID, kind: purchase.kind, skus: purchase.items.map(\.sku))
        {
            owed.insert(.entitlements)
        }
        return owed
    }
}
