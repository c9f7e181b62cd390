import Foundation
public import ReceiptCore

/// A quiet subscription read back with `purchases.subscriptionsv2.get` on the token it was
/// recorded with, and recorded as the notification a push would have been: a renewal, a grace
/// period or hold, or an end. A revocation reads as an end: its latest order, read by id with
/// `orders.batchGet`, tells it a refund.
extension GooglePlayProvider: SubscriptionReading {
    public func readBack(
        _ subscription: QuietSubscription, owner: ClientWithStoreCredentials
    ) async throws -> StoreNotification? {
        let packages = owner.client.appIdentifiers(Self.packageNameKind)
        guard let token = subscription.readBackKey,
            let package = subscription.appIdentifier.flatMap({ packages.contains($0) ? $0 : nil })
                ?? (packages.count == 1 ? packages.first : nil)
        else { return nil }  // recorded before tokens were kept, or of an app the client no longer registers
        let purchase: VerifiedPurchase
        do {
            let key = try serviceAccountKey(owner.credentials)
            // One call: the row already knows its original order (the chain is not walked again).
            var read = try await self.subscription(
                package: package, token: token, productID: subscription.productID, key: key, lenient: true,
                followLinks: false)
            read.originalTransactionID = subscription.originalTransactionID
            purchase = read
        } catch let error as StoreAPIError where error.kind == .notFound || error.kind == .refused {
            return nil  // Google forgot the token (60 days after it ended) or refuses it: nothing to learn
        } catch let error as StoreAPIError {
            throw SubscriptionReadFailed(
                "subscription \(subscription.originalTransactionID) not read back: \(error.operatorHelp)",
                storeWide: error.kind == .unavailable)
        }
        let stateName = purchase.storeAttributes["subscription_state"] ?? ""
        guard purchase.environment == subscription.environment, purchase.dateOutOfRange == nil,
            let event = Self.readBackEvent(purchase)
        else { return nil }
        if event.kind == .expired, let refunded = try await refundedOrder(purchase, package: package, owner: owner) {
            return refunded
        }
        let facts = ReadBack(
            subscriptionState: stateName, latestOrderId: purchase.orderID, productId: purchase.productID,
            expiryTimeMillis: purchase.expiresDate.map { Int64($0.timeIntervalSince1970 * 1000) },
            autoRenewEnabled: purchase.storeAttributes["auto_renew"].map { $0 == "true" })
        var stored = StoreNotification(
            store: store,
            notificationID:
                "subscription-state:\(subscription.originalTransactionID):\(purchase.transactionID):\(stateName)",
            type: "SUBSCRIPTION_STATE", subtype: stateName, environment: purchase.environment, appIdentifier: package,
            transactionID: purchase.transactionID, originalTransactionID: purchase.originalTransactionID,
            productID: purchase.productID,
            signedAt: now(), decodedJSON: try JSONEncoder.sortedForStorage.encode(facts))
        stored.event = event
        return stored
    }

    /// An ended subscription whose latest order Google returns refunded or canceled
    /// (`orders.batchGet`) ended by a revocation, not by running out: recorded as the void, on the
    /// id the voided-purchase push and poll use, so the refund is applied once however learned.
    /// nil when the order is not void, or Google does not return it.
    private func refundedOrder(
        _ purchase: VerifiedPurchase, package: String, owner: ClientWithStoreCredentials
    ) async throws -> StoreNotification? {
        guard let orderID = purchase.orderID, let token = purchase.readBackKey else { return nil }
        let order: BatchGetOrdersResponse.Order?
        do {
            let key = try serviceAccountKey(owner.credentials)
            order = try await orders([orderID], package: package, key: key)[orderID]
        } catch let error as StoreAPIError {
            throw SubscriptionReadFailed(
                "order \(orderID) not read: \(error.operatorHelp)", retryAfter: error.retryAfter,
                storeWide: error.kind == .unavailable)
        }
        guard let order, order.purchaseToken == nil || order.purchaseToken == token, OrderState(order.state).isVoid
        else { return nil }
        let when = Self.voidTime(of: order) ?? now()
        let refunded = try Self.voided(
            purchase, orderID: orderID, token: token, package: package, at: when, reasonCode: nil,
            refund: Self.refund(type: .full, voidedQuantity: nil))
        let facts = OrderReadBack(orderId: orderID, state: order.state ?? "", lastEventTime: order.lastEventTime)
        var stored = StoreNotification(
            store: store, notificationID: "voided:\(orderID)", type: "VOIDED_PURCHASE", subtype: order.state,
            environment: refunded.environment, appIdentifier: package, transactionID: orderID,
            originalTransactionID: refunded.originalTransactionID, productID: refunded.productID, signedAt: when,
            decodedJSON: try JSONEncoder.sortedForStorage.encode(facts))
        stored.event = StoreEvent(kind: .refunded, purchase: refunded)
        return stored
    }

    /// What Google said of the order, kept with the record.
    struct OrderReadBack: Encodable {
        let orderId: String
        let state: String
        let lastEventTime: String?
    }

    /// The ledger event of a subscription as Google reads it now: a paid period (canceled ones run
    /// to their end) is the latest period, a grace period or hold a billing issue, paused or
    /// expired an end. nil for a state Google adds later.
    static func readBackEvent(_ purchase: VerifiedPurchase) -> StoreEvent? {
        let autoRenew = purchase.storeAttributes["auto_renew"].map { $0 == "true" }
        switch SubscriptionStateView(purchase.storeAttributes["subscription_state"]) {
        case .active, .canceled: return StoreEvent(kind: .renewed, purchase: purchase, autoRenew: autoRenew)
        case .inGracePeriod:
            return StoreEvent(
                kind: .billingIssue, purchase: purchase, autoRenew: autoRenew, gracePeriodExpires: purchase.expiresDate)
        case .onHold: return StoreEvent(kind: .billingIssue, purchase: purchase, autoRenew: autoRenew)
        case .paused, .expired: return StoreEvent(kind: .expired, purchase: purchase, autoRenew: autoRenew)
        case .other: return nil
        }
    }

    /// What Google said, kept with the record (never the token).
    struct ReadBack: Encodable {
        let subscriptionState: String
        let latestOrderId: String?
        let productId: String?
        let expiryTimeMillis: Int64?
        let autoRenewEnabled: Bool?
    }
}
