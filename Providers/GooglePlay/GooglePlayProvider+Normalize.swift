package import Foundation
import OpenSSLCrypto
import ReceiptCore

/// Google's answers in store-neutral terms. `lenient` (notifications, voided purchases) keeps a
/// canceled or pending purchase instead of refusing it: there it is news, not evidence.
extension GooglePlayProvider {
    /// One line item of a `productsv2` purchase: the one the evidence names, else the first (a
    /// purchase of several products is verified once per product it names). Its purchase option
    /// and offer are kept on the transaction; a rental ends `rentalPeriod` after the purchase's
    /// completion (`rentalPeriod` is the purchase option's, from the catalog); a pre-order is
    /// pending until Google fulfils it, so it is refused like any pending purchase.
    static func normalize(
        _ product: ProductPurchaseV2, package: String, token: String, productID: String?, consume: Bool,
        lenient: Bool, rentalPeriod: String? = nil
    ) throws -> VerifiedPurchase {
        if !lenient {
            switch product.purchaseStateContext?.purchaseState {
            case "CANCELLED"?, "CANCELED"?: throw Self.canceled
            case "PENDING"?: throw Self.pending
            default: break
            }
        }
        let item = lineItem(product, productID: productID)
        let offer = item?.productOfferDetails
        var purchase = try base(
            orderID: product.orderId, token: token, package: package, test: product.testPurchaseContext != nil)
        purchase.productID = item?.productId
        let consumed = offer?.consumptionState == "CONSUMPTION_STATE_CONSUMED"
        purchase.kind = EntitlementRules.oneTimeKind(consumed: consumed, consumedForClient: consume)
        purchase.quantity = offer?.quantity ?? 1
        purchase.purchaseDate = GoogleTime.rfc3339(product.purchaseCompletionTime)
        purchase.purchaseOptionID = offer?.purchaseOptionId
        purchase.offer = offer?.offerId.map { PurchaseOffer(identifier: $0) }
        if offer?.rentOfferDetails != nil {
            // A pending rental (read for a notification) has no completion yet: no period started.
            if let start = purchase.purchaseDate {
                guard let rentalPeriod, let end = GoogleTime.adding(isoDuration: rentalPeriod, to: start) else {
                    throw GoogleAPIErrors.malformed(
                        "the rental's purchase option \(offer?.purchaseOptionId ?? "?") has no usable rental period "
                            + "(\(rentalPeriod ?? "none"))")
                }
                purchase.expiresDate = end
                purchase.storeAttributes["rental_period"] = rentalPeriod
            } else if !lenient {
                throw GoogleAPIErrors.malformed("a rental without its purchase completion time")
            }
        }
        purchase.storefront = product.regionCode
        purchase.accountToken = product.obfuscatedExternalAccountId
        purchase.storeAttributes["product_type"] = "product"
        purchase.storeAttributes["acknowledged"] = String(
            product.acknowledgementState == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED")
        purchase.storeAttributes["consumed"] = String(consumed)
        if offer?.preorderOfferDetails != nil { purchase.storeAttributes["preorder"] = "true" }
        purchase.storeAttributes["purchase_state"] =
            switch product.purchaseStateContext?.purchaseState {
            case "PURCHASED"?, nil: "purchased"
            case "CANCELLED"?, "CANCELED"?: "canceled"
            case "PENDING"?: "pending"
            default: "unknown"
            }
        return purchase
    }

    /// The line item for `productID`, else the first.
    static func lineItem(_ product: ProductPurchaseV2, productID: String?) -> ProductPurchaseV2.LineItem? {
        let items = product.productLineItem ?? []
        return items.first { productID != nil && $0.productId == productID } ?? items.first
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
        let latestOrder = Self.latestOrder(subscription, productID: productID)
        var original = latestOrder.map(Self.firstOrder)
        var linked = followLinks ? subscription.linkedPurchaseToken : nil
        for _ in 0..<Self.maxChain {
            guard let older = linked else { break }
            do {
                let previous = try await api.subscriptionPurchaseV2(package: package, token: older, key: key)
                if let order = Self.latestOrder(previous, productID: nil) {
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
        if let etag = subscription.etag { purchase.storeAttributes["etag"] = etag }
        if let autoRenew = item?.autoRenewingPlan?.autoRenewEnabled {
            purchase.storeAttributes["auto_renew"] = String(autoRenew)
        }
        purchase.autoRenews = item?.autoRenewingPlan?.autoRenewEnabled
        return purchase
    }

    /// The subscription's latest order: its line item's `latestSuccessfulOrderId` (the
    /// subscription-wide `latestOrderId` is deprecated).
    static func latestOrder(_ subscription: SubscriptionPurchaseV2, productID: String?) -> String? {
        let items = subscription.lineItems ?? []
        let item = items.first { productID != nil && $0.productId == productID } ?? items.first
        return item?.latestSuccessfulOrderId ?? items.lazy.compactMap(\.latestSuccessfulOrderId).first
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

extension GooglePlayProvider {
    /// When a rental of `period` (ISO 8601) started at `start` ends; nil for no usable period.
    package static func rentalEnd(_ period: String, from start: Date) -> Date? {
        GoogleTime.adding(isoDuration: period, to: start)
    }
}
