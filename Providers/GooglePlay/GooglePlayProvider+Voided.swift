import Foundation
import ReceiptCore

extension GooglePlayProvider {
    /// How Google confirmed a pushed void.
    enum VoidConfirmation {
        /// `voidedpurchases.list` names this order with this token: Google's own time and reason.
        case listed(VoidedPurchaseList.VoidedPurchase)
        /// The one-time purchase fetched by the token is this order, and Google now reads it canceled.
        case canceledPurchase
        /// `orders.batchGet` returns this order of this token refunded (all or part) or canceled.
        case order(BatchGetOrdersResponse.Order)
    }

    /// A voided-purchase RTDN names a token and an order, and anyone who can reach the push
    /// endpoint (a leaked `?token=`, a misrouted topic) could name any order, so the push alone
    /// changes nothing: it is applied when Google itself says that order of that token is void.
    /// First the purchase already fetched by its token (no extra call), then the order itself by
    /// its id (`orders.batchGet`), then Google's list of voided purchases. A subscription's state
    /// cannot tell a refund from an ordinary expiry, so only the order or the list confirms one.
    /// Throws `StoreAPIError` when Google cannot be asked.
    func confirmVoid(
        token: String, orderID: String, fetched: VerifiedPurchase?, package: String, hintedAt: Date?,
        key: ServiceAccountKey
    ) async throws -> VoidConfirmation? {
        if let fetched, fetched.orderID == orderID, fetched.storeAttributes["product_type"] == "product",
            fetched.storeAttributes["purchase_state"] == "canceled"
        {
            return .canceledPurchase
        }
        if let order = try await orders([orderID], package: package, key: key)[orderID], order.purchaseToken == token {
            let state = OrderState(order.state)
            if state.isVoid || state == .partiallyRefunded { return .order(order) }
        }
        let nowMillis = Int64(now().timeIntervalSince1970 * 1000)
        let oldest = nowMillis - Int64(configuration.voidedPurchasesLookback * 1000)
        // The push's event time only narrows the search (it is the caller's word): a wrong one
        // can miss a real void, which the poll still finds, but never confirms a false one.
        let hinted = hintedAt.map { Int64($0.timeIntervalSince1970 * 1000) - Self.voidHintSlackMillis } ?? oldest
        let start = min(max(hinted, oldest), nowMillis)
        var pageToken: String?
        for _ in 0..<Self.voidConfirmationPages {
            let page = try await api.voidedPurchases(
                package: package, startMillis: start, endMillis: nowMillis, pageToken: pageToken, key: key)
            if let listed = page.voidedPurchases?.first(where: { $0.orderId == orderID && $0.purchaseToken == token }) {
                return .listed(listed)
            }
            guard let next = page.tokenPagination?.nextPageToken, !next.isEmpty else { return nil }
            pageToken = next
        }
        return nil
    }

    /// How long before the push's event time a void is looked for (Google's void time and the
    /// notification's are close, not equal).
    static let voidHintSlackMillis: Int64 = 24 * 3600 * 1000
    /// Pages of 1000 voids read for one push at most; beyond, the poll is the safety net.
    static let voidConfirmationPages = 10

    /// The pushed void as a refund, if Google confirms it; else the push kept with its outcome
    /// and no ledger change, under Pub/Sub's id so that the real void, when the poll or a later
    /// push learns it on `voided:<order id>`, is not taken for a duplicate.
    func pushedVoid(
        _ voided: DeveloperNotification.VoidedPurchase, token: String, orderID: String, package: String,
        eventTime: Date?,
        request: NotificationRequest
    ) async throws -> (id: String?, type: String, event: StoreEvent) {
        var evidence = GooglePlayEvidence(purchaseToken: token)
        evidence.isSubscription = voided.productType == .subscription ? true : nil
        let access = try await eventAccess(package: package, request: request)
        let fetched = try await fetchForEvent(evidence, package: package, access: access)
        let confirmation: VoidConfirmation?
        do {
            confirmation = try await confirmVoid(
                token: token, orderID: orderID, fetched: fetched, package: package, hintedAt: eventTime, key: access.key
            )
        } catch let error as StoreAPIError {
            logger.warning(
                "a pushed Google Play void could not be checked", ["package": package, "problem": error.message])
            throw NotificationRejection(
                .retryable, reason: error.reason,
                message: "the void could not be checked with Google now")
        }
        let purchase: VerifiedPurchase
        switch confirmation {
        case .listed(let listed)?:
            purchase = try Self.voided(
                fetched, orderID: orderID, token: token, package: package,
                at: GoogleTime.millis(listed.voidedTimeMillis) ?? eventTime ?? now(), reasonCode: listed.voidedReason,
                refund: Self.refund(type: listed.refundType ?? voided.refundType, voidedQuantity: listed.voidedQuantity)
            )
        case .order(let order)?:
            let partial = OrderState(order.state) == .partiallyRefunded
            purchase = try Self.voided(
                fetched, orderID: orderID, token: token, package: package,
                at: Self.voidTime(of: order) ?? eventTime ?? now(), reasonCode: nil,
                refund: Self.refund(
                    type: voided.refundType ?? (partial ? .quantityBasedPartial : .full), voidedQuantity: nil))
        case .canceledPurchase?:
            purchase = try Self.voided(
                fetched, orderID: orderID, token: token, package: package, at: eventTime ?? now(), reasonCode: nil,
                refund: Self.refund(type: voided.refundType, voidedQuantity: nil))
        case nil:
            logger.warning(
                "a pushed Google Play void that Google does not confirm was kept, not applied", ["package": package])
            return (nil, "VOIDED_PURCHASE_UNCONFIRMED", StoreEvent(kind: .other))
        }
        return ("voided:\(orderID)", "VOIDED_PURCHASE", StoreEvent(kind: .refunded, purchase: purchase))
    }
}
