import Foundation

// The Android Publisher API's answers, every field optional: Google adds fields and enum values,
// and a missing one is an answer we work with, not a decoding failure. Enums stay raw strings.

/// `purchases.products.get` (v1).
package struct ProductPurchase: Codable, Sendable {
    package var purchaseTimeMillis: String?
    /// 0 purchased, 1 canceled, 2 pending.
    package var purchaseState: Int?
    /// 0 yet to be consumed, 1 consumed.
    package var consumptionState: Int?
    package var orderId: String?
    /// 0 test (license tester), 1 promo, 2 rewarded; absent for a real purchase.
    package var purchaseType: Int?
    /// 0 yet to be acknowledged, 1 acknowledged.
    package var acknowledgementState: Int?
    package var productId: String?
    package var quantity: Int?
    package var obfuscatedExternalAccountId: String?
    package var regionCode: String?
}

/// `purchases.productsv2.getproductpurchasev2`.
package struct ProductPurchaseV2: Codable, Sendable {
    package struct LineItem: Codable, Sendable {
        package struct OfferDetails: Codable, Sendable {
            package var quantity: Int?
            package var consumptionState: String?
        }
        package var productId: String?
        package var productOfferDetails: OfferDetails?
    }
    package struct StateContext: Codable, Sendable { public var purchaseState: String? }
    package struct TestContext: Codable, Sendable { public var fopType: String? }

    package var productLineItem: [LineItem]?
    package var purchaseStateContext: StateContext?
    package var testPurchaseContext: TestContext?
    package var orderId: String?
    package var obfuscatedExternalAccountId: String?
    package var regionCode: String?
    package var purchaseCompletionTime: String?
    package var acknowledgementState: String?
}

/// `purchases.subscriptionsv2.get`.
package struct SubscriptionPurchaseV2: Codable, Sendable {
    package struct LineItem: Codable, Sendable {
        package struct AutoRenewingPlan: Codable, Sendable { public var autoRenewEnabled: Bool? }
        package struct PrepaidPlan: Codable, Sendable { public var allowExtendAfterTime: String? }
        package var productId: String?
        package var expiryTime: String?
        package var autoRenewingPlan: AutoRenewingPlan?
        package var prepaidPlan: PrepaidPlan?
        package var latestSuccessfulOrderId: String?
    }
    package struct TestPurchase: Codable, Sendable {}
    package struct ExternalAccountIdentifiers: Codable, Sendable { public var obfuscatedExternalAccountId: String? }

    package var lineItems: [LineItem]?
    package var startTime: String?
    package var subscriptionState: String?
    package var latestOrderId: String?
    package var linkedPurchaseToken: String?
    package var testPurchase: TestPurchase?
    package var acknowledgementState: String?
    package var externalAccountIdentifiers: ExternalAccountIdentifiers?
    package var regionCode: String?
}

/// `purchases.voidedpurchases.list`.
package struct VoidedPurchaseList: Codable, Sendable {
    package struct Pagination: Codable, Sendable { public var nextPageToken: String? }
    package struct VoidedPurchase: Codable, Sendable {
        package var kind: String?
        package var purchaseToken: String?
        package var purchaseTimeMillis: String?
        package var voidedTimeMillis: String?
        package var orderId: String?
        /// 0 user, 1 developer, 2 Google.
        package var voidedSource: Int?
        /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud, 6 friendly fraud, 7 chargeback.
        package var voidedReason: Int?
        package var voidedQuantity: Int?
        /// 1 full refund, 2 quantity-based partial refund.
        package var refundType: RefundType?
    }
    package var tokenPagination: Pagination?
    package var voidedPurchases: [VoidedPurchase]?
}

/// Google's times: RFC 3339 strings (v2) and epoch-millisecond strings (v1).
enum GoogleTime {
    static func rfc3339(_ text: String?) -> Date? {
        guard let text else { return nil }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }

    static func millis(_ text: String?) -> Date? {
        guard let text, let value = Int64(text) else { return nil }
        return Date(timeIntervalSince1970: Double(value) / 1000)
    }
}
