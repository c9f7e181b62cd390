import Foundation

extension VerifiedPurchase {
    /// The purchase the caller means among those the evidence holds: the named transaction when
    /// the caller names one, else the one with its product id, else the most recent. The core's
    /// pipeline and the plugin tests' fake core both choose through this.
    package static func choose(
        from purchases: [VerifiedPurchase], productID: String?, transactionID: String? = nil
    ) throws -> VerifiedPurchase {
        let newestFirst = purchases.sorted { ($0.purchaseDate ?? .distantPast) > ($1.purchaseDate ?? .distantPast) }
        guard let newest = newestFirst.first else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "NO_PURCHASE", message: "the evidence holds no purchase")
        }
        var candidates = newestFirst
        if let transactionID {
            candidates = newestFirst.filter {
                $0.transactionID == transactionID || $0.originalTransactionID == transactionID
            }
            // An exact transaction id wins over a renewal that only shares its original id.
            if let exact = candidates.first(where: { $0.transactionID == transactionID }) { candidates = [exact] }
            guard !candidates.isEmpty else {
                throw StoreVerificationError(
                    code: .verificationFailed, reason: "TRANSACTION_NOT_IN_EVIDENCE",
                    message: "the evidence does not hold transaction \(transactionID)")
            }
        }
        guard let productID else { return candidates.first ?? newest }
        guard let match = candidates.first(where: { $0.productID == productID }) else {
            throw StoreVerificationError(
                code: .productMismatch, reason: "PRODUCT_MISMATCH",
                message:
                    "the evidence is for \(candidates.compactMap(\.productID).joined(separator: ", ")), not \(productID)"
            )
        }
        return match
    }
}

extension VerifiedPurchase {
    /// The purchases a claim may take, oldest first, when evidence holds several one-time
    /// purchases of the requested product (an app receipt with unfinished purchases, some
    /// of one product): each claim takes the oldest not yet claimed, so every purchase is
    /// delivered once. Empty when the request names a transaction or no product, or one purchase
    /// matches. Subscriptions keep the newest period (`choose`): their renewals are not
    /// purchases to deliver one by one.
    package static func claimOrder(
        from purchases: [VerifiedPurchase], productID: String?, transactionID: String?
    ) -> [VerifiedPurchase] {
        guard transactionID == nil, let productID else { return [] }
        let oneTime = purchases.filter {
            $0.productID == productID && $0.kind != .autoRenewableSubscription && $0.expiresDate == nil
        }
        guard oneTime.count > 1 else { return [] }
        return oneTime.sorted {
            ($0.purchaseDate ?? .distantPast, $0.transactionID) < ($1.purchaseDate ?? .distantPast, $1.transactionID)
        }
    }
}
