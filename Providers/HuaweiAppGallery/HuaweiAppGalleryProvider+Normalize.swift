import Foundation
import OpenSSLCrypto
import ReceiptCore

/// Huawei's purchase data in store-neutral terms. `lenient` (notifications, read-backs, the
/// cancelled list) keeps a canceled purchase as news of its revocation instead of refusing it;
/// an unfinished one is refused either way (`checkDeliverable`).
extension HuaweiAppGalleryProvider {
    /// A consumable or non-consumable. Refunded (`purchaseState` 2), and canceled (1) read as
    /// news, are recorded as revoked, so the game is told and never delivers; canceled claimed,
    /// pending (3), initialized (-1) or no state at all is no purchase.
    static func normalize(
        _ data: InAppPurchaseData, token: String, site: HuaweiSite, lenient: Bool, now: Date
    ) throws -> VerifiedPurchase {
        try checkDeliverable(data, subscription: false, lenient: lenient)
        var purchase = try base(data, orderID: data.orderId, token: token, site: site)
        purchase.kind =
            switch data.typedKind {
            case .consumable: .consumable
            case .nonConsumable: .nonConsumable
            case .subscription: .autoRenewableSubscription
            case .other: nil
            }
        if data.state == .refunded || (lenient && data.state == .canceled) {
            purchase.revocationDate = HuaweiTime.millis(data.cancelTime) ?? now
            purchase.revocationReason = data.state == .refunded ? "refunded" : "canceled"
        }
        return purchase
    }

    /// A subscription's latest receipt. Huawei makes a new `orderId` for every fee deduction (each
    /// receipt its own order), names the previous deduction's order `lastOrderId`, and keeps
    /// `subscriptionId` and the purchase token for the subscription's whole life: so this receipt
    /// is the transaction, and the subscription id its original, as the ledger keys every store's
    /// subscriptions. `askedSubscriptionID` is the id Huawei's subscription service answered for,
    /// the original when the data leaves `subscriptionId` out; only without either is the order
    /// its own original (nothing else stays the same across renewals).
    static func normalizeSubscription(
        _ data: InAppPurchaseData, token: String, site: HuaweiSite, lenient: Bool, now: Date,
        askedSubscriptionID: String? = nil
    ) throws -> VerifiedPurchase {
        try checkDeliverable(data, subscription: true, lenient: lenient)
        let subscriptionID = data.subscriptionId ?? askedSubscriptionID.flatMap { $0.isEmpty ? nil : $0 }
        var purchase = try base(data, orderID: data.orderId, token: token, site: site)
        purchase.originalTransactionID = subscriptionID ?? purchase.transactionID
        purchase.kind = .autoRenewableSubscription
        purchase.quantity = data.quantity ?? 1
        purchase.expiresDate = HuaweiTime.millis(data.expirationDate)
        purchase.autoRenews = data.autoRenewing
        let renewal = data.numOfPeriods.map { $0 > 1 } ?? (data.lastOrderId.map { $0 != data.orderId } ?? false)
        purchase.storeAttributes["renewal"] = String(renewal)
        if let lastOrderID = data.lastOrderId { purchase.storeAttributes["last_order_id"] = lastOrderID }
        // A switch from another subscription of the group: kept for support; the ledger has no
        // notion of one subscription replacing another, so it is a subscription of its own.
        if let switchedFrom = data.oriSubscriptionId { purchase.storeAttributes["ori_subscription_id"] = switchedFrom }
        if let subscriptionID {
            purchase.storeAttributes["subscription_id"] = subscriptionID
            purchase.readBackKey = ReadBackKey(subscriptionID: subscriptionID, token: token, site: site).encoded
        }
        if let valid = data.subIsvalid { purchase.storeAttributes["sub_is_valid"] = String(valid) }
        if let autoRenew = data.autoRenewing { purchase.storeAttributes["auto_renew"] = String(autoRenew) }
        // What a read-back needs to tell a billing issue from an end.
        if let retry = data.retryFlag { purchase.storeAttributes["retry_flag"] = String(retry) }
        if let grace = data.graceExpirationTime { purchase.storeAttributes["grace_expiration_time"] = String(grace) }
        if let cancelTime = HuaweiTime.millis(data.cancelTime) {
            // Revoked with a refund (customer service, or an upgrade taking effect at once).
            purchase.revocationDate = cancelTime
            purchase.revocationReasonCode = data.cancelReason
            purchase.revocationReason = data.cancelReason.flatMap { subscriptionCancelReasons[$0] } ?? "revoked"
        } else if data.state == .refunded {
            purchase.revocationDate = now
            purchase.revocationReason = "refunded"
        }
        return purchase
    }

    /// The one rule for what Huawei's signed data must show before it is a purchase, for one-time
    /// products and subscriptions, claims and news alike: purchased (0) or refunded (2, recorded
    /// revoked). Pending (3), initialized (-1), an unknown or a missing state is not finished and
    /// nothing to deliver or record: a read-back or notification that finds one records no
    /// payment, renewal or charge. Canceled (1) is no purchase to claim; as news (`lenient`:
    /// notifications, read-backs, the cancelled list) it is recorded only where it means the
    /// purchase was revoked: a one-time product's, or a subscription's Huawei dates (`cancelTime`).
    /// A subscription without an expiry date cannot be told active from ended, so it is refused
    /// rather than taken as active for ever, unless (news) Huawei shows it revoked.
    static func checkDeliverable(
        _ data: InAppPurchaseData, subscription: Bool, lenient: Bool
    ) throws(StoreVerificationError) {
        switch data.state {
        case .purchased, .refunded: break
        case .canceled where lenient && (!subscription || data.cancelTime != nil): break
        case .canceled: throw canceled
        case .other: throw unfinished
        }
        if subscription, data.expirationDate == nil,
            !(lenient && (data.cancelTime != nil || data.state == .refunded || data.state == .canceled))
        {
            throw noExpiry
        }
    }

    /// What every Huawei purchase shares. A purchase without an order id is keyed by a digest of
    /// its token, never by the token itself.
    static func base(
        _ data: InAppPurchaseData, orderID: String?, token: String, site: HuaweiSite
    ) throws -> VerifiedPurchase {
        let id = try orderID ?? "HWT." + String(SHA256.hex(Data(token.utf8)).prefix(40))
        var purchase = VerifiedPurchase(
            store: .huaweiAppGallery, environment: data.purchaseType == 0 ? .sandbox : .production, transactionID: id)
        purchase.appIdentifier = data.packageName
        purchase.orderID = orderID
        purchase.originalTransactionID = id
        purchase.productID = data.productId
        purchase.quantity = data.quantity ?? 1
        purchase.purchaseDate = HuaweiTime.millis(data.purchaseTime)
        purchase.storefront = data.country
        purchase.currency = data.currency
        // Huawei's price is the amount times 100.
        purchase.priceMilliunits = data.price.flatMap {
            $0.multipliedReportingOverflow(by: 10).overflow ? nil : $0 * 10
        }
        purchase.ownership = .purchased
        var attributes = [
            "purchase_token": token, "package_name": data.packageName ?? "", "site": site.rawValue,
            "purchase_state": data.purchaseState.map { purchaseStates[$0] ?? String($0) } ?? "unknown",
            "product_type": data.kind.flatMap { productTypes[$0] } ?? data.kind.map(String.init) ?? "unknown",
        ]
        if let confirmed = data.confirmed { attributes["confirmed"] = String(confirmed == 1) }
        if let consumed = data.consumptionState { attributes["consumed"] = String(consumed == 1) }
        if let accountFlag = data.accountFlag { attributes["account_flag"] = String(accountFlag) }
        if let applicationID = data.applicationId { attributes["application_id"] = String(applicationID) }
        if let purchaseType = data.purchaseType { attributes["purchase_type"] = String(purchaseType) }
        purchase.storeAttributes = attributes
        return purchase
    }

    /// What reading a subscription again needs: its id, token and site.
    struct ReadBackKey: Codable, Sendable {
        let subscriptionID: String
        let token: String
        let site: HuaweiSite

        var encoded: String? {
            (try? JSONEncoder.sortedForStorage.encode(self)).map { String(decoding: $0, as: UTF8.self) }
        }
    }

    static let purchaseStates: [Int: String] = [
        -1: "initialized", 0: "purchased", 1: "canceled", 2: "refunded", 3: "pending",
    ]
    static let productTypes: [Int: String] = [0: "consumable", 1: "non_consumable", 2: "subscription"]
    static let subscriptionCancelReasons: [Int: String] = [0: "other", 1: "app_problem", 2: "upgrade_or_crossgrade"]

    static let canceled = StoreVerificationError(
        code: .verificationFailed, reason: "PURCHASE_CANCELED",
        message: "Huawei says the purchase was canceled and is not a purchase")
    static let unfinished = StoreVerificationError(
        code: .verificationFailed, reason: "PURCHASE_NOT_COMPLETED",
        message: "Huawei says the purchase is not completed; deliver nothing until it is purchased")
    static let noExpiry = StoreVerificationError(
        code: .verificationFailed, reason: "SUBSCRIPTION_EXPIRY_MISSING",
        message: "Huawei's subscription data has no expirationDate, so whether it is active cannot be told; "
            + "nothing is delivered")
}

extension HuaweiSite: Codable {}

extension JSONEncoder {
    static var sortedForStorage: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
