import Foundation

// The parts of a StoreKit 2 transaction and its renewal info that App Store Server API 1.16–1.21
// and Notifications 2.17–2.21 added for Advanced Commerce and for commitment plans. Names follow
// Apple's reference (developer.apple.com/documentation/appstoreserverapi: AdvancedCommerceTransactionInfo,
// AdvancedCommerceTransactionItem, AdvancedCommerceRefund, AdvancedCommerceRenewalInfo,
// AdvancedCommerceRenewalItem, TransactionCommitmentInfo, RenewalCommitmentInfo, billingPlanType)
// and app-store-server-library 3.1's models of them, key for key. Every field is optional, every
// enumerated value a raw-value struct: Apple's required fields are Apple's promise, not ours to
// enforce, and a value added later is kept, not refused.

/// How a subscription is billed: all at once, or monthly over a 12-month commitment
/// (BillingPlanType, RenewalBillingPlanType).
package struct BillingPlanType: AppStoreRawValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    package static let billedUpfront = Self(rawValue: "BILLED_UPFRONT")
    package static let monthly = Self(rawValue: "MONTHLY")
}

/// The commitment a period of a commitment plan belongs to (TransactionCommitmentInfo).
package struct TransactionCommitmentInfo: Codable, Hashable, Sendable {
    /// Which payment of the commitment this transaction is, from 1.
    package var billingPeriodNumber: Int?
    package var commitmentExpiresDate: AppStoreDate?
    /// The whole commitment's price, in milliunits.
    package var commitmentPrice: Int64?
    package var totalBillingPeriods: Int?

    package init() {}
}

/// What happens once the current commitment ends (RenewalCommitmentInfo): present only while the
/// subscription is in a commitment.
package struct RenewalCommitmentInfo: Codable, Hashable, Sendable {
    package var commitmentAutoRenewProductId: String?
    package var commitmentAutoRenewStatus: AutoRenewStatus?
    package var commitmentRenewalBillingPlanType: BillingPlanType?
    package var commitmentRenewalDate: AppStoreDate?
    package var commitmentRenewalPrice: Int64?

    package init() {}
}

/// A display name and description (AdvancedCommerceDescriptors).
package struct AdvancedCommerceDescriptors: Codable, Hashable, Sendable {
    package var description: String?
    package var displayName: String?

    package init() {}
}

/// A discount on an Advanced Commerce item (AdvancedCommerceOffer).
package struct AdvancedCommerceOffer: Codable, Hashable, Sendable {
    package var period: String?
    package var periodCount: Int?
    package var price: Int64?
    package var reason: String?

    package init() {}
}

/// One refund of an Advanced Commerce item (AdvancedCommerceRefund).
package struct AdvancedCommerceRefund: Codable, Hashable, Sendable {
    package var refundAmount: Int64?
    package var refundDate: AppStoreDate?
    /// `UNINTENDED_PURCHASE`, `FULFILLMENT_ISSUE`, `UNSATISFIED_WITH_PURCHASE`, `LEGAL`, `OTHER`,
    /// `MODIFY_ITEMS_REFUND`, `SIMULATE_REFUND_DECLINE`, or a later one: kept as written.
    package var refundReason: String?
    /// `FULL`, `PRORATED`, `CUSTOM`, or a later one.
    package var refundType: String?

    package init() {}
}

/// One item sold under an Advanced Commerce transaction (AdvancedCommerceTransactionItem).
package struct AdvancedCommerceTransactionItem: Codable, Hashable, Sendable {
    package var SKU: String?
    package var description: String?
    package var displayName: String?
    package var offer: AdvancedCommerceOffer?
    package var price: Int64?
    package var refunds: [AdvancedCommerceRefund]?
    package var revocationDate: AppStoreDate?

    package init() {}
}

/// The Advanced Commerce part of a transaction (AdvancedCommerceTransactionInfo).
package struct AdvancedCommerceTransactionInfo: Codable, Hashable, Sendable {
    package var descriptors: AdvancedCommerceDescriptors?
    package var estimatedTax: Int64?
    package var items: [AdvancedCommerceTransactionItem]?
    package var period: String?
    package var requestReferenceId: String?
    package var taxCode: String?
    package var taxExclusivePrice: Int64?
    package var taxRate: String?

    package init() {}
}

/// A pending price increase of an Advanced Commerce renewal item (AdvancedCommercePriceIncreaseInfo).
package struct AdvancedCommercePriceIncreaseInfo: Codable, Hashable, Sendable {
    package var dependentSKUs: [String]?
    package var price: Int64?
    /// `SCHEDULED`, `PENDING`, `ACCEPTED`, or a later one.
    package var status: String?

    package init() {}
}

/// One item an Advanced Commerce subscription renews with (AdvancedCommerceRenewalItem).
package struct AdvancedCommerceRenewalItem: Codable, Hashable, Sendable {
    package var SKU: String?
    package var description: String?
    package var displayName: String?
    package var offer: AdvancedCommerceOffer?
    package var price: Int64?
    package var priceIncreaseInfo: AdvancedCommercePriceIncreaseInfo?

    package init() {}
}

/// The Advanced Commerce part of a renewal info (AdvancedCommerceRenewalInfo).
package struct AdvancedCommerceRenewalInfo: Codable, Hashable, Sendable {
    package var consistencyToken: String?
    package var descriptors: AdvancedCommerceDescriptors?
    package var items: [AdvancedCommerceRenewalItem]?
    package var period: String?
    package var requestReferenceId: String?
    package var taxCode: String?

    package init() {}
}
