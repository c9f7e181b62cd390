import Foundation
import ReceiptCore

extension HuaweiAppGalleryProvider {
    /// A record of the cancelled list as the refund to record, or nil when Huawei's own signed
    /// answer does not back it. The list names a token, and the ledger changes only as the
    /// purchase read again by that token shows (the notifications' rule): revoked, it is a refund
    /// dated by the list; still purchased, unknown to Huawei, another app's or an environment the
    /// client does not accept, nothing. Throws `HuaweiAPIError` when Huawei cannot be asked now, so
    /// the page is read again by the next run.
    func cancelledPurchase(_ listed: HuaweiCancelledPurchase, access: Access, apps: Set<String>, environments: Set<StoreEnvironment>,
                           site: HuaweiSite) async throws -> StoreNotification? {
        guard let token = listed.purchaseToken, var evidence = try? HuaweiEvidence.bareToken(token) else { return nil }
        if let subscriptionID = listed.subscriptionId {
            evidence.subscriptionID = subscriptionID
            evidence.kind = 2
        }
        let listedAt = HuaweiTime.millis(listed.cancelledTime)
        var purchase: VerifiedPurchase
        do {
            // At the site that listed it: an AppTouch purchase is known only there.
            purchase = try await fetch(evidence, productID: listed.productId, access: access, registered: apps, lenient: true, deadline: nil,
                                       site: site, revokedAt: listedAt)
        } catch let error as HuaweiAPIError where error.kind == .notFound || error.kind == .rejected {
            // Unknown to Huawei now, or (code 6) a subscription the order service will not read and
            // the list gave no subscription id for: nothing signed backs the record. A refunded
            // subscription still reaches the ledger by its notification or its read-back.
            logger.info("a Huawei cancelled purchase could not be read again; nothing changed", ["problem": error.message])
            return nil
        } catch let error as HuaweiAPIError where error.kind == .badSignature {
            logger.warning("a Huawei cancelled purchase's data does not match the app's IAP key; nothing changed", ["app": access.app.id])
            return nil
        } catch is StoreVerificationError {
            return nil  // another package or product: nothing of this client's to change
        }
        guard purchase.revocationDate != nil, environments.contains(purchase.environment), purchase.dateOutOfRange == nil else { return nil }
        if purchase.revocationReasonCode == nil, let reason = listed.cancelledReason {
            purchase.revocationReasonCode = reason
            purchase.revocationReason = HuaweiCancelledPurchase.reasons[reason] ?? purchase.revocationReason
        }
        let orderID = listed.orderId ?? purchase.orderID ?? purchase.transactionID
        var stored = StoreNotification(
            store: store, notificationID: "cancelled:\(orderID)", type: "CANCELLED_PURCHASE",
            subtype: listed.cancelledSource.flatMap { HuaweiCancelledPurchase.sources[$0] }, environment: purchase.environment,
            appIdentifier: purchase.appIdentifier, transactionID: purchase.transactionID, originalTransactionID: purchase.originalTransactionID,
            productID: purchase.productID, signedAt: listedAt ?? purchase.revocationDate, decodedJSON: listed.kept)
        stored.event = StoreEvent(kind: .refunded, purchase: purchase)
        return stored
    }
}
