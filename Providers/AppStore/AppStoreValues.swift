public import Foundation

/// Apple adds enum values without notice. Every App Store enum is a struct over its raw value:
/// known values have names, unknown ones decode and survive untouched.
package protocol AppStoreRawValue: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible
where RawValue: Codable & Hashable & Sendable {
    init(rawValue: RawValue)
}

extension AppStoreRawValue {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(RawValue.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { "\(rawValue)" }
}

public struct AppStoreEnvironment: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let production = Self(rawValue: "Production")
    public static let sandbox = Self(rawValue: "Sandbox")
    package static let xcode = Self(rawValue: "Xcode")
    package static let localTesting = Self(rawValue: "LocalTesting")
}

public struct TransactionType: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let autoRenewableSubscription = Self(rawValue: "Auto-Renewable Subscription")
    public static let nonConsumable = Self(rawValue: "Non-Consumable")
    public static let consumable = Self(rawValue: "Consumable")
    public static let nonRenewingSubscription = Self(rawValue: "Non-Renewing Subscription")
}

public struct InAppOwnershipType: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let familyShared = Self(rawValue: "FAMILY_SHARED")
    public static let purchased = Self(rawValue: "PURCHASED")
}

package struct TransactionReason: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let purchase = Self(rawValue: "PURCHASE")
    public static let renewal = Self(rawValue: "RENEWAL")
}

public struct RevocationReason: AppStoreRawValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    package static let refundedForOtherReason = Self(rawValue: 0)
    package static let refundedDueToIssue = Self(rawValue: 1)
}

package struct OfferType: AppStoreRawValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    package static let introductoryOffer = Self(rawValue: 1)
    package static let promotionalOffer = Self(rawValue: 2)
    package static let offerCode = Self(rawValue: 3)
    package static let winBackOffer = Self(rawValue: 4)
}

package struct OfferDiscountType: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    package static let freeTrial = Self(rawValue: "FREE_TRIAL")
    package static let payAsYouGo = Self(rawValue: "PAY_AS_YOU_GO")
    package static let payUpFront = Self(rawValue: "PAY_UP_FRONT")
    package static let oneTime = Self(rawValue: "ONE_TIME")
}

/// How the App Store revoked a transaction (App Store Server API 1.19): a full refund, a
/// prorated one, or Family Sharing withdrawn. Unknown values are kept as Apple wrote them.
package struct RevocationType: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    package static let refundFull = Self(rawValue: "REFUND_FULL")
    package static let refundProrated = Self(rawValue: "REFUND_PRORATED")
    package static let familyRevoke = Self(rawValue: "FAMILY_REVOKE")
}

package struct AutoRenewStatus: AppStoreRawValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let off = Self(rawValue: 0)
    public static let on = Self(rawValue: 1)
}

package struct ExpirationIntent: AppStoreRawValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    package static let customerCancelled = Self(rawValue: 1)
    package static let billingError = Self(rawValue: 2)
    package static let customerDidNotConsentToPriceIncrease = Self(rawValue: 3)
    package static let productNotAvailable = Self(rawValue: 4)
    public static let other = Self(rawValue: 5)
}

package struct PriceIncreaseStatus: AppStoreRawValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    package static let customerHasNotResponded = Self(rawValue: 0)
    package static let customerConsentedOrWasNotifiedWithoutNeedingConsent = Self(rawValue: 1)
}

public struct NotificationType: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let subscribed = Self(rawValue: "SUBSCRIBED")
    package static let didChangeRenewalPref = Self(rawValue: "DID_CHANGE_RENEWAL_PREF")
    package static let didChangeRenewalStatus = Self(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    package static let offerRedeemed = Self(rawValue: "OFFER_REDEEMED")
    package static let didRenew = Self(rawValue: "DID_RENEW")
    public static let expired = Self(rawValue: "EXPIRED")
    package static let didFailToRenew = Self(rawValue: "DID_FAIL_TO_RENEW")
    package static let gracePeriodExpired = Self(rawValue: "GRACE_PERIOD_EXPIRED")
    package static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    public static let refund = Self(rawValue: "REFUND")
    package static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
    package static let refundReversed = Self(rawValue: "REFUND_REVERSED")
    package static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
    package static let renewalExtended = Self(rawValue: "RENEWAL_EXTENDED")
    package static let revoke = Self(rawValue: "REVOKE")
    public static let test = Self(rawValue: "TEST")
    package static let renewalExtension = Self(rawValue: "RENEWAL_EXTENSION")
    package static let externalPurchaseToken = Self(rawValue: "EXTERNAL_PURCHASE_TOKEN")
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
    // 2025–26: a parent's consent withdrawn (Declared Age Range), and Advanced Commerce changes
    // to a subscription's metadata, its migration to another product, its price. News, kept raw.
    package static let rescindConsent = Self(rawValue: "RESCIND_CONSENT")
    package static let metadataUpdate = Self(rawValue: "METADATA_UPDATE")
    package static let migration = Self(rawValue: "MIGRATION")
    package static let priceChange = Self(rawValue: "PRICE_CHANGE")
}

public struct NotificationSubtype: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    package static let initialBuy = Self(rawValue: "INITIAL_BUY")
    package static let resubscribe = Self(rawValue: "RESUBSCRIBE")
    package static let downgrade = Self(rawValue: "DOWNGRADE")
    package static let upgrade = Self(rawValue: "UPGRADE")
    public static let autoRenewEnabled = Self(rawValue: "AUTO_RENEW_ENABLED")
    package static let autoRenewDisabled = Self(rawValue: "AUTO_RENEW_DISABLED")
    package static let voluntary = Self(rawValue: "VOLUNTARY")
    package static let billingRetry = Self(rawValue: "BILLING_RETRY")
    package static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    public static let gracePeriod = Self(rawValue: "GRACE_PERIOD")
    public static let pending = Self(rawValue: "PENDING")
    public static let accepted = Self(rawValue: "ACCEPTED")
    package static let billingRecovery = Self(rawValue: "BILLING_RECOVERY")
    package static let productNotForSale = Self(rawValue: "PRODUCT_NOT_FOR_SALE")
    public static let summary = Self(rawValue: "SUMMARY")
    public static let failure = Self(rawValue: "FAILURE")
    package static let unreported = Self(rawValue: "UNREPORTED")
}

public struct SubscriptionStatus: AppStoreRawValue {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public static let active = Self(rawValue: 1)
    public static let expired = Self(rawValue: 2)
    package static let billingRetry = Self(rawValue: 3)
    package static let billingGracePeriod = Self(rawValue: 4)
    public static let revoked = Self(rawValue: 5)
}

/// An App Store timestamp: milliseconds since 1970, sometimes with a fraction.
public struct AppStoreDate: Codable, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Whole milliseconds (a fraction is dropped).
    public let milliseconds: Int64

    package init(milliseconds: Int64) { self.milliseconds = milliseconds }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let whole = try? container.decode(Int64.self) {
            milliseconds = whole
        } else {
            let value = try container.decode(Double.self)
            guard value.isFinite, abs(value) < 9e15 else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "timestamp out of range")
            }
            milliseconds = Int64(value.rounded(.down))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(milliseconds)
    }

    public var date: Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
    public var description: String { "\(milliseconds)" }
    public static func < (lhs: AppStoreDate, rhs: AppStoreDate) -> Bool { lhs.milliseconds < rhs.milliseconds }
}
