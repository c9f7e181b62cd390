import Foundation
import ReceiptCore

// What a StoreKit 2 transaction says it was bought under, in store-neutral terms: its offer
// (offerType, offerIdentifier, offerDiscountType, offerPeriod; offer codes for every product kind
// since Notifications 2.17 / Server API 1.16, with `ONE_TIME` for one-time products), the items
// of an Advanced Commerce transaction (advancedCommerceInfo.items, each with its SKU, refunds
// and revocationDate), and a commitment plan's billing (billingPlanType, commitmentInfo; Server
// API 1.21). Apple's enumerated values pass through as Apple wrote them.
extension AppStoreProvider {
    static func offer(of transaction: JWSTransactionDecodedPayload) -> PurchaseOffer? {
        guard
            transaction.offerType != nil || transaction.offerIdentifier != nil
                || transaction.offerDiscountType != nil || transaction.offerPeriod != nil
        else { return nil }
        return PurchaseOffer(
            type: transaction.offerType.map(offerTypeName), identifier: transaction.offerIdentifier,
            discountType: transaction.offerDiscountType?.rawValue, period: transaction.offerPeriod)
    }

    static func offerTypeName(_ type: OfferType) -> String {
        switch type {
        case .introductoryOffer: "introductory"
        case .promotionalOffer: "promotional"
        case .offerCode: "offer_code"
        case .winBackOffer: "win_back"
        default: String(type.rawValue)
        }
    }

    /// The items with a SKU (an item without one could be mapped to nothing and is left out).
    static func items(of transaction: JWSTransactionDecodedPayload) -> [PurchaseItem] {
        (transaction.advancedCommerceInfo?.items ?? []).compactMap { item in
            guard let sku = item.SKU, !sku.isEmpty else { return nil }
            return PurchaseItem(
                sku: sku, displayName: item.displayName, priceMilliunits: item.price,
                revocationDate: item.revocationDate?.date,
                refunds: (item.refunds ?? []).map {
                    ItemRefund(
                        amountMilliunits: $0.refundAmount, date: $0.refundDate?.date, reason: $0.refundReason,
                        type: $0.refundType)
                })
        }
    }

    static func commitment(of transaction: JWSTransactionDecodedPayload) -> BillingCommitment? {
        guard transaction.billingPlanType != nil || transaction.commitmentInfo != nil else { return nil }
        let info = transaction.commitmentInfo
        return BillingCommitment(
            billingPlanType: transaction.billingPlanType?.rawValue, billingPeriodNumber: info?.billingPeriodNumber,
            totalBillingPeriods: info?.totalBillingPeriods, expiresDate: info?.commitmentExpiresDate?.date,
            priceMilliunits: info?.commitmentPrice)
    }
}
