import Crypto
import Foundation
import ReceiptCore

/// Huawei's purchase data in store-neutral terms. `lenient` (notifications) keeps a canceled or
/// unfinished purchase instead of refusing it: there it is news, not evidence.
extension HuaweiAppGalleryProvider {
    /// A consumable or non-consumable. Refunded (`purchaseState` 2) is recorded as revoked, so
    /// the game is told and never delivers; canceled (1) or not finished (-1) is no purchase.
    static func normalize(_ data: InAppPurchaseData, token: String, site: HuaweiSite, lenient: Bool, now: Date) throws -> VerifiedPurchase {
        if !lenient {
            switch data.state {
            case .canceled: throw canceled
            case .purchased, .refunded: break
            case .other: throw unfinished
            }
        }
        var purchase = try base(data, orderID: data.orderId, token: token, site: site)
        purchase.kind = switch data.typedKind {
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

    /// A subscription's latest receipt. `orderId` is the order that started it (the same as
    /// `lastOrderId` on the first purchase), `lastOrderId` the latest charge: a renewal is a new
    /// transaction of the same original, as the ledger keys every store's subscriptions.
    static func normalizeSubscription(_ data: InAppPurchaseData, token: String, site: HuaweiSite, lenient: Bool, now: Date) throws -> VerifiedPurchase {
        if !lenient, data.state == .canceled || data.state == .other(-1) {
            throw data.state == .canceled ? canceled : unfinished
        }
        var purchase = try base(data, orderID: data.lastOrderId ?? data.orderId, token: token, site: site)
        purchase.originalTransactionID = data.orderId ?? purchase.transactionID
        purchase.kind = .autoRenewableSubscription
        purchase.quantity = data.quantity ?? 1
        purchase.expiresDate = HuaweiTime.millis(data.expirationDate)
        purchase.autoRenews = data.autoRenewing
        purchase.storeAttributes["renewal"] = String(purchase.transactionID != purchase.originalTransactionID)
        if let subscriptionID = data.subscriptionId {
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

    /// What every Huawei purchase shares. A purchase without an order id is keyed by a digest of
    /// its token, never by the token itself.
    static func base(_ data: InAppPurchaseData, orderID: String?, token: String, site: HuaweiSite) throws -> VerifiedPurchase {
        let id = try orderID ?? "HWT." + String(SHA256.hex(Data(token.utf8)).prefix(40))
        var purchase = VerifiedPurchase(store: .huaweiAppGallery, environment: data.purchaseType == 0 ? .sandbox : .production, transactionID: id)
        purchase.appIdentifier = data.packageName
        purchase.orderID = orderID
        purchase.originalTransactionID = id
        purchase.productID = data.productId
        purchase.quantity = data.quantity ?? 1
        purchase.purchaseDate = HuaweiTime.millis(data.purchaseTime)
        purchase.storefront = data.country
        purchase.currency = data.currency
        // Huawei's price is the amount times 100.
        purchase.priceMilliunits = data.price.flatMap { $0.multipliedReportingOverflow(by: 10).overflow ? nil : $0 * 10 }
        purchase.ownership = .purchased
        var attributes = ["purchase_token": token, "package_name": data.packageName ?? "", "site": site.rawValue,
                          "purchase_state": purchaseStates[data.purchaseState ?? 0] ?? data.purchaseState.map(String.init) ?? "unknown",
                          "product_type": data.kind.flatMap { productTypes[$0] } ?? data.kind.map(String.init) ?? "unknown"]
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

        var encoded: String? { (try? JSONEncoder.sortedForStorage.encode(self)).map { String(decoding: $0, as: UTF8.self) } }
    }

    static let purchaseStates: [Int: String] = [-1: "initialized", 0: "purchased", 1: "canceled", 2: "refunded"]
    static let productTypes: [Int: String] = [0: "consumable", 1: "non_consumable", 2: "subscription"]
    static let subscriptionCancelReasons: [Int: String] = [0: "other", 1: "app_problem", 2: "upgrade_or_crossgrade"]

    static let canceled = StoreVerificationError(code: .verificationFailed, reason: "PURCHASE_CANCELED",
                                                 message: "Huawei says the purchase was canceled and is not a purchase")
    static let unfinished = StoreVerificationError(code: .verificationFailed, reason: "PURCHASE_NOT_COMPLETED",
                                                   message: "Huawei says the purchase is not completed; deliver nothing until it is purchased")
}

extension HuaweiSite: Codable {}

extension JSONEncoder {
    static var sortedForStorage: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
