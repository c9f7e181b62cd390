import Foundation
import ReceiptCore

/// StoreKit 1 confirmed through the App Store Server API: one lookup per transaction that can
/// answer the request, never more than `maxLookups`, none after the deadline or cancellation.
extension AppReceiptValidator {
    /// The transactions worth asking Apple about, most recent first, each id once: the requested
    /// product's (at most `limit`), or else only the most recent transaction of the receipt (so a
    /// product mismatch is still reported as one). A receipt may list thousands of entries;
    /// Apple is asked about a handful. A transaction the caller names (or the chain it started) is
    /// asked about instead, when the receipt holds it.
    static func lookups(
        in receipt: AppReceipt, productID: String?, transactionID: String? = nil, limit: Int
    ) -> [AppReceipt.InAppPurchase] {
        var seen = Set<String>()
        let unique = receipt.inApp.filter { purchase in
            guard let id = purchase.transactionID, !id.isEmpty else { return false }
            return seen.insert(id).inserted
        }
        // Stable: among equal dates, the entry listed last counts as the most recent.
        let newestFirst = unique.enumerated().sorted { lhs, rhs in
            let left = lhs.element.purchaseDate ?? .distantPast, right = rhs.element.purchaseDate ?? .distantPast
            return left != right ? left > right : lhs.offset > rhs.offset
        }.map(\.element)
        if let transactionID {
            let exact = newestFirst.filter { $0.transactionID == transactionID }
            let chain = newestFirst.filter {
                $0.transactionID != transactionID && $0.originalTransactionID == transactionID
            }
            if !(exact + chain).isEmpty { return Array((exact + chain).prefix(max(limit, 0))) }
        }
        if let productID {
            let requested = newestFirst.filter { $0.productID == productID }
            if !requested.isEmpty { return Array(requested.prefix(max(limit, 0))) }
        }
        return Array(newestFirst.prefix(min(1, max(limit, 0))))
    }

    func confirmWithServerAPI(
        _ receipt: AppReceipt, client: AppStoreServerAPIClient, expectations: AppStoreExpectations, productID: String?,
        transactionID: String? = nil,
        deadline: ContinuousClock.Instant?
    ) async throws(AppStoreVerificationError) -> [ConfirmedReceiptTransaction] {
        let planned = Self.lookups(in: receipt, productID: productID, transactionID: transactionID, limit: maxLookups)
        var confirmed: [ConfirmedReceiptTransaction] = []
        for purchase in planned {
            guard let transactionID = purchase.transactionID else { continue }
            try Self.checkTimeLeft(
                before: "App Store lookup \(confirmed.count + 1) of \(planned.count)", deadline: deadline)
            let answer: (signedTransaction: String, environment: AppStoreEnvironment)
            do {
                answer = try await client.transactionInfoInAnyEnvironment(
                    transactionID, preferring: receipt.environment ?? .production)
            } catch {
                throw Self.classify(error, transactionID: transactionID)
            }
            let transaction = try verifier.verifyTransaction(answer.signedTransaction, expecting: expectations)
            guard transaction.transactionId == transactionID else {
                throw AppStoreVerificationError(
                    .receiptNotConfirmed, "Apple answered for another transaction than \(transactionID)")
            }
            confirmed.append(
                ConfirmedReceiptTransaction(
                    environment: transaction.environment ?? answer.environment, transactionID: transactionID,
                    originalTransactionID: transaction.originalTransactionId ?? purchase.originalTransactionID,
                    productID: transaction.productId ?? purchase.productID, quantity: Int64(transaction.quantity ?? 1),
                    purchaseDate: transaction.purchaseDate?.date ?? purchase.purchaseDate,
                    expiresDate: transaction.expiresDate?.date,
                    cancellationDate: transaction.revocationDate?.date ?? purchase.cancellationDate,
                    webOrderLineItemID: transaction.webOrderLineItemId ?? purchase.webOrderLineItemID.map(String.init),
                    signedTransaction: transaction))
        }
        return confirmed
    }

    /// A failed lookup as the refusal of the evidence. An answer that is not Apple's is answered
    /// as not confirmed, as it always has been for the App Store (the other stores answer it as
    /// their trouble).
    static func classify(_ error: StoreAPIError, transactionID: String) -> AppStoreVerificationError {
        if error.isTransactionNotFound {
            return AppStoreVerificationError(
                .receiptNotConfirmed, "Apple knows no transaction \(transactionID) in either environment")
        }
        return switch error.kind {
        case .unavailable: AppStoreVerificationError(.storeUnavailable, error.message)
        case .credentialsRefused, .notConfigured:
            AppStoreVerificationError(
                .misconfigured, "the App Store Server API refused our key (\(error.status ?? 0))")
        case .notFound, .refused, .forged, .malformedAnswer:
            AppStoreVerificationError(.receiptNotConfirmed, error.message)
        }
    }
}
