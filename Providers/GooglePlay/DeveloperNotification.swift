import Foundation

/// A Pub/Sub push (`{"message": {"data", "messageId", ...}, "subscription"}`) carrying a Google
/// Play real-time developer notification in `data` (base64 JSON).
struct PubSubPush: Decodable {
    struct Message: Decodable {
        let data: String?
        let messageId: String?
        let message_id: String?
        let publishTime: String?
    }
    let message: Message?
    let subscription: String?
}

/// The RTDN itself. Exactly one of the notification objects is set.
struct DeveloperNotification: Codable {
    struct Subscription: Codable {
        let version: String?
        let notificationType: Int?
        let purchaseToken: String?
        let subscriptionId: String?
    }
    struct OneTimeProduct: Codable {
        let version: String?
        let notificationType: Int?
        let purchaseToken: String?
        let sku: String?
    }
    struct VoidedPurchase: Codable {
        let purchaseToken: String?
        let orderId: String?
        /// 1 subscription, 2 one-time product.
        let productType: Int?
        let refundType: Int?
    }
    struct Test: Codable { let version: String? }
    /// A chargeback Google asks the developer to review (answered with `orders.reviewrefund`).
    struct PendingRefundReview: Codable {
        let version: String?
        let pendingRefundToken: String?
        let orderId: String?
        let refundReason: Int?
        let obfuscatedAccountId: String?
        let obfuscatedProfileId: String?
    }

    let version: String?
    let packageName: String?
    let eventTimeMillis: String?
    let subscriptionNotification: Subscription?
    let oneTimeProductNotification: OneTimeProduct?
    let voidedPurchaseNotification: VoidedPurchase?
    let testNotification: Test?
    let pendingRefundReviewNotification: PendingRefundReview?

    /// As kept for support and shown to operators: a pending refund token (what answers the
    /// review) is not shown; the raw push keeps it.
    var redacted: DeveloperNotification {
        guard let review = pendingRefundReviewNotification else { return self }
        return DeveloperNotification(version: version, packageName: packageName, eventTimeMillis: eventTimeMillis,
                                     subscriptionNotification: subscriptionNotification, oneTimeProductNotification: oneTimeProductNotification,
                                     voidedPurchaseNotification: voidedPurchaseNotification, testNotification: testNotification,
                                     pendingRefundReviewNotification: PendingRefundReview(
                                        version: review.version, pendingRefundToken: review.pendingRefundToken.map { _ in "(kept until answered)" },
                                        orderId: review.orderId, refundReason: review.refundReason,
                                        obfuscatedAccountId: review.obfuscatedAccountId, obfuscatedProfileId: review.obfuscatedProfileId))
    }

    /// Google's subscription notification types by number.
    static let subscriptionTypes: [Int: String] = [
        1: "SUBSCRIPTION_RECOVERED", 2: "SUBSCRIPTION_RENEWED", 3: "SUBSCRIPTION_CANCELED", 4: "SUBSCRIPTION_PURCHASED",
        5: "SUBSCRIPTION_ON_HOLD", 6: "SUBSCRIPTION_IN_GRACE_PERIOD", 7: "SUBSCRIPTION_RESTARTED", 8: "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED",
        9: "SUBSCRIPTION_DEFERRED", 10: "SUBSCRIPTION_PAUSED", 11: "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED", 12: "SUBSCRIPTION_REVOKED",
        13: "SUBSCRIPTION_EXPIRED", 17: "SUBSCRIPTION_ITEMS_CHANGED", 18: "SUBSCRIPTION_CANCELLATION_SCHEDULED",
        19: "SUBSCRIPTION_PRICE_CHANGE_UPDATED", 20: "SUBSCRIPTION_PENDING_PURCHASE_CANCELED", 22: "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED",
    ]
    static let oneTimeTypes: [Int: String] = [1: "ONE_TIME_PRODUCT_PURCHASED", 2: "ONE_TIME_PRODUCT_CANCELED"]
}
