import Foundation
import ReceiptCore

/// RVS's answer for one receipt. Every field optional, unknown values kept raw: Amazon adds
/// fields and product types over time, and the version 1.0 answer names no package.
struct RVSReceipt: Codable, Sendable {
    var receiptId: String?
    var productId: String?
    var productType: String?
    /// Epoch milliseconds, as every date here.
    var purchaseDate: Int64?
    var cancelDate: Int64?
    /// null: not canceled; 0: reason not known yet; 1: the customer canceled the order; 2: Amazon
    /// canceled it (a subscription whose payment failed past its grace period); 4: replaced by
    /// another subscription (a tier change). 3 is Amazon-internal.
    var cancelReason: Int?
    var renewalDate: Int64?
    var quantity: Int?
    var term: String?
    var termSku: String?
    var testTransaction: Bool?
    var betaProduct: Bool?
    var autoRenewing: Bool?
    var countryCode: String?
    var parentProductId: String?
    var freeTrialEndDate: Int64?
    var gracePeriodEndDate: Int64?

    /// `productType`, typed; a value Amazon adds later stays `.other`.
    enum ProductType: Equatable {
        case consumable, entitled, subscription, other(String)

        init(_ raw: String?) {
            switch raw?.uppercased() {
            case "CONSUMABLE"?: self = .consumable
            case "ENTITLED"?: self = .entitled
            case "SUBSCRIPTION"?: self = .subscription
            default: self = .other(raw ?? "")
            }
        }
    }

    var type: ProductType { ProductType(productType) }

    static func millis(_ value: Int64?) -> Date? { value.map { Date(timeIntervalSince1970: Double($0) / 1000) } }

    static func decode(_ body: Data) throws(StoreAPIError) -> RVSReceipt {
        do { return try JSONDecoder().decode(RVSReceipt.self, from: body) } catch {
            throw AmazonAPIErrors.malformed("RVS answered with JSON we cannot read", status: HTTPStatus(200))
        }
    }
}

extension RVSReceipt {
    /// In store-neutral terms. A canceled one-time purchase is refunded (never a delivery: the
    /// ledger reads a revocation as refunded). A canceled subscription is refunded only when the
    /// customer canceled the order; Amazon ending it (payment lapsed, tier change) or not yet
    /// saying why is an expiry at `cancelDate`, since a refund would owe the game a claw-back that
    /// Amazon never announced. A `cancelDate` still ahead is when a paid-up subscription ends.
    func normalized(
        requestedReceiptID: String, userID: String, sandboxAnswered: Bool, package: String?, now: Date
    ) -> VerifiedPurchase {
        let test = testTransaction == true
        let id = receiptId.flatMap { $0.isEmpty ? nil : $0 } ?? requestedReceiptID
        var purchase = VerifiedPurchase(
            store: .amazonAppstore, environment: sandboxAnswered || test ? .sandbox : .production, transactionID: id)
        purchase.originalTransactionID = id
        purchase.appIdentifier = package
        purchase.productID = productId
        purchase.quantity = quantity ?? 1
        purchase.purchaseDate = Self.millis(purchaseDate)
        purchase.storefront = countryCode
        purchase.ownership = .purchased
        purchase.kind =
            switch type {
            case .consumable: .consumable
            case .entitled: .nonConsumable
            case .subscription: .autoRenewableSubscription
            case .other: nil
            }
        purchase.storeAttributes = attributes(userID: userID, sandboxAnswered: sandboxAnswered)
        let canceled = Self.millis(cancelDate)
        if type == .subscription {
            // RVS reads a receipt for a user: both are what a later read-back needs.
            purchase.readBackKey = AmazonAppstoreProvider.ReadBackKey(user: userID, receipt: id).encoded
            purchase.expiresDate = Self.millis(renewalDate)
            purchase.autoRenews = autoRenewing
            if let canceled {
                if cancelReason == 1 && canceled <= now {
                    purchase.revocationDate = canceled
                    purchase.revocationReason = "customer_canceled"
                } else {
                    purchase.expiresDate = canceled
                }
            }
        } else if let canceled {
            purchase.revocationDate = canceled
            purchase.revocationReason = Self.cancelReasons[cancelReason ?? 0] ?? "canceled"
        }
        return purchase
    }

    private func attributes(userID: String, sandboxAnswered: Bool) -> [String: String] {
        var attributes = [
            "amazon_user_id": userID, "product_type": productType ?? "",
            "test_transaction": String(testTransaction == true),
            "beta_product": String(betaProduct == true), "rvs_environment": sandboxAnswered ? "sandbox" : "production",
        ]
        if let termSku { attributes["term_sku"] = termSku }
        if let term { attributes["term"] = term }
        if let autoRenewing { attributes["auto_renew"] = String(autoRenewing) }
        if let cancelReason { attributes["cancel_reason"] = String(cancelReason) }
        if let parentProductId { attributes["parent_product_id"] = parentProductId }
        return attributes
    }

    static let cancelReasons: [Int: String] = [
        0: "canceled", 1: "customer_canceled", 2: "amazon_canceled", 4: "replaced",
    ]
}
