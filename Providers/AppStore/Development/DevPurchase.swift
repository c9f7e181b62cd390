import Foundation
import OpenSSLCrypto

/// A StoreKit 2 transaction as a development signer issues it: the fields Apple's signed
/// transactions carry for a fresh purchase, signed by the development PKI's leaf.
struct DevPurchase {
    enum Kind: String, CaseIterable {
        case consumable, nonConsumable = "non_consumable", autoRenewable = "auto_renewable"

        var appStoreType: TransactionType {
            switch self {
            case .consumable: .consumable
            case .nonConsumable: .nonConsumable
            case .autoRenewable: .autoRenewableSubscription
            }
        }
    }

    var bundleID: String
    var productID: String
    var transactionID: String
    var kind: Kind = .consumable
    var environment: AppStoreEnvironment = .sandbox

    /// A fresh 16-digit id, like the ones Apple issues, so each call is a new purchase.
    static func randomTransactionID() -> String {
        String(UInt64.random(in: 1_000_000_000_000_000...9_999_999_999_999_999))
    }

    /// The compact JWS: ES256, `x5c` leaf → intermediate → root.
    func signed(with pki: DevPKI, at now: Date = Date()) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try CompactJWS.sign(
            payload: try encoder.encode(payload(at: now)), header: JWSHeader(x5c: pki.x5c), key: pki.leafKey)
    }

    /// Dates are epoch milliseconds; a subscription runs for a month from now.
    func payload(at now: Date) -> Payload {
        let millis = Int64(now.timeIntervalSince1970 * 1000)
        let subscription = kind == .autoRenewable
        return Payload(
            transactionId: transactionID, originalTransactionId: transactionID, bundleId: bundleID,
            productId: productID,
            purchaseDate: millis, originalPurchaseDate: millis, signedDate: millis, type: kind.appStoreType.rawValue,
            environment: environment.rawValue,
            expiresDate: subscription ? millis + 30 * 86_400_000 : nil,
            subscriptionGroupIdentifier: subscription ? "20000000" : nil,
            webOrderLineItemId: subscription ? transactionID : nil)
    }

    /// A signed transaction's fields, as `dev purchase` signs them and `dev notify` signs them again
    /// with what changed (a refund's revocation, a renewal's next period).
    struct Payload: Codable {
        var transactionId: String, originalTransactionId: String, bundleId: String, productId: String
        var purchaseDate: Int64, originalPurchaseDate: Int64, signedDate: Int64
        var type: String, environment: String
        var expiresDate: Int64?, subscriptionGroupIdentifier: String?, webOrderLineItemId: String?
        var quantity = 1
        var inAppOwnershipType = "PURCHASED"
        var transactionReason = "PURCHASE"
        var storefront = "USA", storefrontId = "143441"
        /// $0.99 in milliunits, as Apple states prices.
        var price: Int64 = 990, currency = "USD"
        var revocationDate: Int64?, revocationReason: Int?

        init(
            transactionId: String, originalTransactionId: String, bundleId: String, productId: String,
            purchaseDate: Int64, originalPurchaseDate: Int64, signedDate: Int64, type: String, environment: String,
            expiresDate: Int64?, subscriptionGroupIdentifier: String?, webOrderLineItemId: String?
        ) {
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.bundleId = bundleId
            self.productId = productId
            self.purchaseDate = purchaseDate
            self.originalPurchaseDate = originalPurchaseDate
            self.signedDate = signedDate
            self.type = type
            self.environment = environment
            self.expiresDate = expiresDate
            self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
            self.webOrderLineItemId = webOrderLineItemId
        }
    }
}
