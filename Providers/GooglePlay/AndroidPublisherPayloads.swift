import Foundation

// The Android Publisher API's answers, every field optional: Google adds fields and enum values,
// and a missing one is an answer we work with, not a decoding failure. Enums stay raw strings.

/// `purchases.productsv2.getproductpurchasev2` (`ProductPurchaseV2` in the Android Publisher API v3
/// discovery document and reference, with Play Billing Library 8's purchase options and offers):
/// one purchase of one or more one-time products, each line item with the purchase option (buy,
/// rent, pre-order) and the offer it was bought under.
package struct ProductPurchaseV2: Codable, Sendable {
    package struct LineItem: Codable, Sendable {
        /// `ProductOfferDetails`.
        package struct OfferDetails: Codable, Sendable {
            /// `RentOfferDetails`: set for a rental (its period is the purchase option's, read from the catalog).
            package struct Rent: Codable, Sendable {}
            /// `PreorderOfferDetails`: set for a pre-order, and kept after it is fulfilled.
            package struct Preorder: Codable, Sendable { package var preorderReleaseTime: String? }
            package var purchaseOptionId: String?
            package var offerId: String?
            package var offerTags: [String]?
            package var quantity: Int?
            package var refundableQuantity: Int?
            package var consumptionState: String?
            package var rentOfferDetails: Rent?
            package var preorderOfferDetails: Preorder?
        }
        package var productId: String?
        package var productOfferDetails: OfferDetails?
    }
    /// `PurchaseStateContext.purchaseState`: `PURCHASED`, `CANCELLED`, `PENDING` (a pre-order
    /// waiting for its release is pending until Google fulfils it).
    package struct StateContext: Codable, Sendable { package var purchaseState: String? }
    package struct TestContext: Codable, Sendable { package var fopType: String? }

    package var productLineItem: [LineItem]?
    package var purchaseStateContext: StateContext?
    package var testPurchaseContext: TestContext?
    package var orderId: String?
    package var obfuscatedExternalAccountId: String?
    package var regionCode: String?
    package var purchaseCompletionTime: String?
    package var acknowledgementState: String?
}

/// `monetization.onetimeproducts.get` (`OneTimeProduct`): only what the ledger needs, a purchase
/// option's rental period.
package struct OneTimeProduct: Codable, Sendable {
    /// `OneTimeProductPurchaseOption`.
    package struct PurchaseOption: Codable, Sendable {
        /// `OneTimeProductRentPurchaseOption`: both periods in ISO 8601 (`P7D`).
        package struct RentOption: Codable, Sendable {
            /// How long the buyer has the product, from the purchase flow's completion.
            package var rentalPeriod: String?
            package var expirationPeriod: String?
        }
        package var purchaseOptionId: String?
        package var state: String?
        package var rentOption: RentOption?
    }
    package var packageName: String?
    package var productId: String?
    package var purchaseOptions: [PurchaseOption]?
}

/// `purchases.subscriptionsv2.get`. The order is each line item's `latestSuccessfulOrderId`
/// (`latestOrderId` is deprecated and is not read).
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
    package var linkedPurchaseToken: String?
    package var testPurchase: TestPurchase?
    package var acknowledgementState: String?
    package var externalAccountIdentifiers: ExternalAccountIdentifiers?
    package var regionCode: String?
    /// Required by `subscriptionsv2.defer`: the deferral fails unless it names the latest one.
    package var etag: String?
}

/// `orders.batchGet` (`BatchGetOrdersResponse`), and each `Order` as far as the ledger reads it.
package struct BatchGetOrdersResponse: Codable, Sendable {
    package struct Order: Codable, Sendable {
        /// `OrderHistory`: when Google processed, canceled or refunded the order.
        package struct History: Codable, Sendable {
            package struct Event: Codable, Sendable { package var eventTime: String? }
            package var processedEvent: Event?
            package var cancellationEvent: Event?
            package var refundEvent: Event?
            package var partialRefundEvents: [Event]?
        }
        package var orderId: String?
        package var purchaseToken: String?
        /// `PENDING`, `PROCESSED`, `CANCELED`, `PENDING_REFUND`, `PARTIALLY_REFUNDED`, `REFUNDED`;
        /// another value is kept as Google sent it.
        package var state: String?
        package var createTime: String?
        package var lastEventTime: String?
        package var orderHistory: History?
    }
    package var orders: [Order]?
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

extension GoogleTime {
    /// `start` plus an ISO 8601 duration as Google writes a rental period (`P7D`, `PT48H`, `P1M`,
    /// `P1W`): years, months, weeks and days on the UTC calendar, then hours, minutes and whole
    /// seconds. nil for text that is not such a duration, or that adds nothing.
    static func adding(isoDuration text: String, to start: Date) -> Date? {
        var rest = Substring(text)
        guard rest.first == "P", text.count <= 64 else { return nil }
        rest = rest.dropFirst()
        var components = DateComponents()
        var inTime = false
        var number = ""
        var sawAny = false
        for character in rest {
            if character == "T" {
                guard !inTime, number.isEmpty else { return nil }
                inTime = true
            } else if character.isASCII, character.isNumber {
                number.append(character)
            } else {
                guard let value = Int(number), value <= 100_000 else { return nil }
                number = ""
                sawAny = true
                switch (inTime, character) {
                case (false, "Y"): components.year = value
                case (false, "M"): components.month = value
                case (false, "W"): components.day = (components.day ?? 0) + 7 * value
                case (false, "D"): components.day = (components.day ?? 0) + value
                case (true, "H"): components.hour = value
                case (true, "M"): components.minute = value
                case (true, "S"): components.second = value
                default: return nil
                }
            }
        }
        guard number.isEmpty, sawAny else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        guard let end = calendar.date(byAdding: components, to: start), end > start else { return nil }
        return end
    }
}
