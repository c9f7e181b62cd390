import Foundation
import OpenSSLCrypto
import ReceiptCore

/// Google's answers in store-neutral terms. `lenient` (notifications, voided purchases) keeps a
/// canceled or pending purchase instead of refusing it: there it is news, not evidence.
extension GooglePlayProvider {
    static func normalize(
        _ product: ProductPurchase, package: String, productID: String, token: String, consume: Bool,
        lenient: Bool
    ) throws -> VerifiedPurchase {
        if !lenient {
            switch product.purchaseState {
            case 1?: throw Self.canceled
            case 2?: throw Self.pending
            default: break
            }
        }
        var purchase = try base(
            orderID: product.orderId, token: token, package: package, test: product.purchaseType == 0)
        purchase.productID = product.productId ?? productID
        purchase.kind = EntitlementRules.oneTimeKind(
            consumed: product.consumptionState == 1, consumedForClient: consume)
        purchase.quantity = product.quantity ?? 1
        purchase.purchaseDate = GoogleTime.millis(product.purchaseTimeMillis)
        purchase.storefront = product.regionCode
        purchase.accountToken = product.obfuscatedExternalAccountId
        purchase.storeAttributes["product_type"] = "product"
        purchase.storeAttributes["acknowledged"] = String(product.acknowledgementState == 1)
        purchase.storeAttributes["consumed"] = String(product.consumptionState == 1)
        purchase.storeAttributes["purchase_state"] =
            [0: "purchased", 1: "canceled", 2: "pending"][product.purchaseState ?? 0] ?? "unknown"
        return purchase
    }

    static func normalize(
        _ product: ProductPurchaseV2, package: String, token: String, consume: Bool, lenient: Bool
    ) throws -> VerifiedPurchase {
        if !lenient {
            switch product.purchaseStateContext?.purchaseState {
            case "CANCELLED"?, "CANCELED"?: throw Self.canceled
            case "PENDING"?: throw Self.pending
            default: break
            }
        }
        let item = product.productLineItem?.first
        var purchase = try base(
            orderID: product.orderId, token: token, package: package, test: product.testPurchaseContext != nil)
        purchase.productID = item?.productId
        let consumed = item?.productOfferDetails?.consumptionState == "CONSUMPTION_STATE_CONSUMED"
        purchase.kind = EntitlementRules.oneTimeKind(consumed: consumed, consumedForClient: consume)
        purchase.quantity = item?.productOfferDetails?.quantity ?? 1
        purchase.purchaseDate = GoogleTime.rfc3339(product.purchaseCompletionTime)
        purchase.storefront = product.regionCode
        purchase.accountToken = product.obfuscatedExternalAccountId
        purchase.storeAttributes["product_type"] = "product"
        purchase.storeAttributes["acknowledged"] = String(
            product.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        purchase.storeAttributes["consumed"] = String(consumed)
        purchase.storeAttributes["purchase_state"] =
            switch product.purchaseStateContext?.purchaseState {
            case "PURCHASED"?, nil: "purchased"
            case "CANCELLED"?, "CANCELED"?: "canceled"
            case "PENDING"?: "pending"
            default: "unknown"
            }
        return purchase
    }

    /// A subscription, its original order found by following `linkedPurchaseToken` (upgrades,
    /// downgrades, re-subscriptions) back to the first purchase Google still knows.
    /// `followLinks: false` reads the token alone (its original order is known already).
    func subscription(
        package: String, token: String, productID: String?, key: ServiceAccountKey, lenient: Bool,
        followLinks: Bool = true
    ) async throws -> VerifiedPurchase {
        let subscription = try await api.subscriptionPurchaseV2(package: package, token: token, key: key)
        if !lenient {
            switch subscription.subscriptionState {
            case "SUBSCRIPTION_STATE_PENDING"?: throw Self.pending
            case "SUBSCRIPTION_STATE_PENDING_PURCHASE_CANCELED"?: throw Self.canceled
            default: break
            }
        }
        let latestOrder = subscription.latestOrderId ?? subscription.lineItems?.first?.latestSuccessfulOrderId
        var original = latestOrder.map(Self.firstOrder)
        var linked = followLinks ? subscription.linkedPurchaseToken : nil
        for _ in 0..<Self.maxChain {
            guard let older = linked else { break }
            do {
                let previous = try await api.subscriptionPurchaseV2(package: package, token: older, key: key)
                if let order = previous.latestOrderId ?? previous.lineItems?.first?.latestSuccessfulOrderId {
                    original = Self.firstOrder(order)
                }
                linked = previous.linkedPurchaseToken
            } catch let error as StoreAPIError where error.kind == .notFound || error.kind == .refused {
                break  // Google forgets tokens 60 days after they expire: the chain ends there.
            }
        }
        let items = subscription.lineItems ?? []
        let item = items.first { $0.productId == productID } ?? items.first
        var purchase = try Self.base(
            orderID: latestOrder, token: token, package: package, test: subscription.testPurchase != nil)
        purchase.originalTransactionID = original ?? purchase.transactionID
        purchase.productID = item?.productId
        purchase.kind =
            item?.autoRenewingPlan != nil || item?.prepaidPlan == nil
            ? .autoRenewableSubscription : .nonRenewingSubscription
        purchase.quantity = 1
        purchase.purchaseDate = GoogleTime.rfc3339(subscription.startTime)
        purchase.expiresDate = GoogleTime.rfc3339(item?.expiryTime)
        purchase.storefront = subscription.regionCode
        purchase.accountToken = subscription.externalAccountIdentifiers?.obfuscatedExternalAccountId
        purchase.storeAttributes["product_type"] = "subscription"
        purchase.storeAttributes["acknowledged"] = String(
            subscription.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        purchase.storeAttributes["subscription_state"] = subscription.subscriptionState ?? ""
        purchase.readBackKey = token  // what subscriptionsv2.get needs to read it again
        if let autoRenew = item?.autoRenewingPlan?.autoRenewEnabled {
            purchase.storeAttributes["auto_renew"] = String(autoRenew)
        }
        purchase.autoRenews = item?.autoRenewingPlan?.autoRenewEnabled
        return purchase
    }

    /// What every Google purchase shares. A purchase without an order id (some test and promo
    /// purchases) is keyed by a digest of its token, never by the token itself.
    static func base(orderID: String?, token: String, package: String, test: Bool) throws -> VerifiedPurchase {
        let id = try orderID ?? "GPT." + String(SHA256.hex(Data(token.utf8)).prefix(40))
        var purchase = VerifiedPurchase(
            store: .googlePlay, environment: test ? .sandbox : .production, transactionID: id)
        purchase.appIdentifier = package
        purchase.orderID = orderID
        purchase.originalTransactionID = orderID.map(firstOrder) ?? id
        purchase.ownership = .purchased
        purchase.storeAttributes = ["purchase_token": token, "package_name": package]
        return purchase
    }

    /// `GPA.1234-5678-9012-34567..3` (the fourth renewal) → `GPA.1234-5678-9012-34567`.
    static func firstOrder(_ orderID: String) -> String {
        guard let range = orderID.range(of: "..") else { return orderID }
        return String(orderID[..<range.lowerBound])
    }

    static let maxChain = 10

    static let pending = StoreVerificationError(
        code: .verificationFailed, reason: "PURCHASE_PENDING",
        message: "the purchase is pending (not paid yet); deliver nothing until Google says it is purchased")
    static let canceled = StoreVerificationError(
        code: .verificationFailed, reason: "PURCHASE_CANCELED",
        message: "the purchase was canceled and is not a purchase")
}
