import Foundation

// The Android Publisher API's answers, every field optional: Google adds fields and enum values,
// and a missing one is an answer we work with, not a decoding failure. Enums stay raw strings.

/// `purchases.products.get` (v1).
public struct ProductPurchase: Codable, Sendable {
    public var purchaseTimeMillis: String?
    /// 0 purchased, 1 canceled, 2 pending.
    public var purchaseState: Int?
    /// 0 yet to be consumed, 1 consumed.
    public var consumptionState: Int?
    public var orderId: String?
    /// 0 test (license tester), 1 promo, 2 rewarded; absent for a real purchase.
    public var purchaseType: Int?
    /// 0 yet to be acknowledged, 1 acknowledged.
    public var acknowledgementState: Int?
    public var productId: String?
    public var quantity: Int?
    public var obfuscatedExternalAccountId: String?
    public var regionCode: String?
}

/// `purchases.productsv2.getproductpurchasev2`.
public struct ProductPurchaseV2: Codable, Sendable {
    public struct LineItem: Codable, Sendable {
        public struct OfferDetails: Codable, Sendable {
            public var quantity: Int?
            public var consumptionState: String?
        }
        public var productId: String?
        public var productOfferDetails: OfferDetails?
    }
    public struct StateContext: Codable, Sendable { public var purchaseState: String? }
    public struct TestContext: Codable, Sendable { public var fopType: String? }

    public var productLineItem: [LineItem]?
    public var purchaseStateContext: StateContext?
    public var testPurchaseContext: TestContext?
    public var orderId: String?
    public var obfuscatedExternalAccountId: String?
    public var regionCode: String?
    public var purchaseCompletionTime: String?
    public var acknowledgementState: String?
}

/// `purchases.subscriptionsv2.get`.
public struct SubscriptionPurchaseV2: Codable, Sendable {
    public struct LineItem: Codable, Sendable {
        public struct AutoRenewingPlan: Codable, Sendable { public var autoRenewEnabled: Bool? }
        public struct PrepaidPlan: Codable, Sendable { public var allowExtendAfterTime: String? }
        public var productId: String?
        public var expiryTime: String?
        public var autoRenewingPlan: AutoRenewingPlan?
        public var prepaidPlan: PrepaidPlan?
        public var latestSuccessfulOrderId: String?
    }
    public struct TestPurchase: Codable, Sendable {}
    public struct ExternalAccountIdentifiers: Codable, Sendable { public var obfuscatedExternalAccountId: String? }

    public var lineItems: [LineItem]?
    public var startTime: String?
    public var subscriptionState: String?
    public var latestOrderId: String?
    public var linkedPurchaseToken: String?
    public var testPurchase: TestPurchase?
    public var acknowledgementState: String?
    public var externalAccountIdentifiers: ExternalAccountIdentifiers?
    public var regionCode: String?
}

/// `purchases.voidedpurchases.list`.
public struct VoidedPurchaseList: Codable, Sendable {
    public struct Pagination: Codable, Sendable { public var nextPageToken: String? }
    public struct VoidedPurchase: Codable, Sendable {
        public var kind: String?
        public var purchaseToken: String?
        public var purchaseTimeMillis: String?
        public var voidedTimeMillis: String?
        public var orderId: String?
        /// 0 user, 1 developer, 2 Google.
        public var voidedSource: Int?
        /// 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase, 5 fraud, 6 friendly fraud, 7 chargeback.
        public var voidedReason: Int?
        public var voidedQuantity: Int?
        /// 1 full refund, 2 quantity-based partial refund.
        public var refundType: Int?
    }
    public var tokenPagination: Pagination?
    public var voidedPurchases: [VoidedPurchase]?
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
