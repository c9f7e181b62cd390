import Foundation
import ReceiptCore

extension HuaweiAppGalleryProvider {
    /// A record of the cancelled list as the refund to record, or nil when Huawei does not back
    /// it. The list names a token, and the ledger changes as the purchase read again by that token
    /// shows (the notifications' rule): revoked, it is a refund dated by the list; still purchased,
    /// another app's or an environment the client does not accept, nothing. A one-time product the
    /// order service no longer reads (Huawei verifies only a product's latest token: one confirmed
    /// and bought again answers 12, "no such record"; 9 is "consumed or confirmed") is backed by
    /// the record itself, since the list is Huawei's own answer to the app's authenticated
    /// request, not a hint anyone could send. Throws `StoreAPIError` when Huawei cannot be asked
    /// now, so the page is read again by the next run.
    func cancelledPurchase(
        _ listed: HuaweiCancelledPurchase, access: Access, apps: Set<String>, environments: Set<StoreEnvironment>,
        site: HuaweiSite
    ) async throws -> StoreNotification? {
        guard let token = listed.purchaseToken, var evidence = try? HuaweiEvidence.bareToken(token) else { return nil }
        if let subscriptionID = listed.subscriptionId {
            evidence.subscriptionID = subscriptionID
            evidence.kind = 2
        }
        let listedAt = HuaweiTime.millis(listed.cancelledTime)
        var purchase: VerifiedPurchase
        do {
            // At the site that listed it: an AppTouch purchase is known only there.
            purchase = try await fetch(
                evidence, productID: listed.productId, access: access, registered: apps, lenient: true, deadline: nil,
                site: site, revokedAt: listedAt)
        } catch let error as StoreAPIError where error.kind == .notFound {
            // Only a token Huawei refuses because it was delivered (9 consumed or confirmed, 12 no
            // longer the latest): one it does not know at all (8) stays unbacked.
            guard error.huaweiCode == .consumedOrConfirmed || error.huaweiCode == .noSuchRecord,
                let listedRefund = Self.listedRefund(
                    listed, token: token, apps: apps, site: site, at: listedAt ?? now())
            else {
                logger.info(
                    "a Huawei cancelled purchase could not be read again; nothing changed", ["problem": error.message])
                return nil
            }
            purchase = listedRefund
        } catch let error as StoreAPIError where error.kind == .refused {
            // (Code 6) a subscription the order service will not read and the list gave no
            // subscription id for, or a token Huawei refuses: nothing backs the record. A refunded
            // subscription still reaches the ledger by its notification or its read-back.
            logger.info(
                "a Huawei cancelled purchase could not be read again; nothing changed", ["problem": error.message])
            return nil
        } catch let error as StoreAPIError where error.kind == .forged {
            logger.warning(
                "a Huawei cancelled purchase's data does not match the app's IAP key; nothing changed",
                ["app": access.app.id])
            return nil
        } catch is StoreVerificationError {
            return nil  // another package or product: nothing of this client's to change
        }
        guard purchase.revocationDate != nil, environments.contains(purchase.environment),
            purchase.dateOutOfRange == nil
        else { return nil }
        if purchase.revocationReasonCode == nil, let reason = listed.cancelledReason {
            purchase.revocationReasonCode = reason
            purchase.revocationReason = HuaweiCancelledPurchase.reasons[reason] ?? purchase.revocationReason
        }
        let orderID = listed.orderId ?? purchase.orderID ?? purchase.transactionID
        var stored = StoreNotification(
            store: store, notificationID: "cancelled:\(orderID)", type: "CANCELLED_PURCHASE",
            subtype: listed.cancelledSource.flatMap { HuaweiCancelledPurchase.sources[$0] },
            environment: purchase.environment,
            appIdentifier: purchase.appIdentifier, transactionID: purchase.transactionID,
            originalTransactionID: purchase.originalTransactionID,
            productID: purchase.productID, signedAt: listedAt ?? purchase.revocationDate, decodedJSON: listed.kept)
        stored.event = StoreEvent(kind: .refunded, purchase: purchase)
        return stored
    }

    /// A listed one-time product as the refund the list itself proves: its order id (the
    /// ledger's transaction id for a one-time product), product, token and dates from the record.
    /// The record carries no package or environment: the client's first Huawei package, and
    /// production (the list is of real purchases). Nil for a subscription's record (its
    /// subscription is re-read by id, or left to its notification) or a record without its order.
    static func listedRefund(
        _ listed: HuaweiCancelledPurchase, token: String, apps: Set<String>, site: HuaweiSite, at revokedAt: Date
    ) -> VerifiedPurchase? {
        guard listed.subscriptionId == nil, let orderID = listed.orderId, let app = apps.sorted().first else {
            return nil
        }
        var purchase = VerifiedPurchase(store: .huaweiAppGallery, environment: .production, transactionID: orderID)
        purchase.orderID = orderID
        purchase.originalTransactionID = orderID
        purchase.productID = listed.productId
        purchase.appIdentifier = app
        purchase.purchaseDate = HuaweiTime.millis(listed.purchaseTime)
        purchase.ownership = .purchased
        purchase.revocationDate = revokedAt
        purchase.revocationReason = "refunded"
        purchase.storeAttributes = ["purchase_token": token, "site": site.rawValue, "backed_by": "cancelled_list"]
        return purchase
    }
}
