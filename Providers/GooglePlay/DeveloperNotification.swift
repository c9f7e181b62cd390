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
        let notificationType: SubscriptionNotificationType?
        let purchaseToken: String?
        // `subscriptionId` is deprecated in the notification and is not read: the subscription's
        // products come from `subscriptionsv2.get`.
    }
    struct OneTimeProduct: Codable {
        let version: String?
        let notificationType: OneTimeNotificationType?
        let purchaseToken: String?
        let sku: String?
    }
    struct VoidedPurchase: Codable {
        let purchaseToken: String?
        let orderId: String?
        let productType: VoidedProductType?
        let refundType: RefundType?
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
        return DeveloperNotification(
            version: version, packageName: packageName, eventTimeMillis: eventTimeMillis,
            subscriptionNotification: subscriptionNotification, oneTimeProductNotification: oneTimeProductNotification,
            voidedPurchaseNotification: voidedPurchaseNotification, testNotification: testNotification,
            pendingRefundReviewNotification: PendingRefundReview(
                version: review.version,
                pendingRefundToken: review.pendingRefundToken.map { _ in "(kept until answered)" },
                orderId: review.orderId, refundReason: review.refundReason,
                obfuscatedAccountId: review.obfuscatedAccountId, obfuscatedProfileId: review.obfuscatedProfileId))
    }

    /// Google's subscription notification types by number.
}
