public import Foundation
public import ReceiptCore

/// The operator's changes to a subscription, all through `purchases.subscriptionsv2` (the v1
/// `purchases.subscriptions` revoke, cancel, defer and refund are deprecated and never called):
/// `:revoke` with a full or prorated refund, `:cancel` as the developer, `:defer` with the etag
/// just read. The ledger moves on Google's notifications and read-backs, not here.
extension GooglePlayProvider: SubscriptionManaging {
    public func change(
        _ change: SubscriptionChange, of subscription: QuietSubscription, owner: ClientWithStoreCredentials
    ) async throws -> Date? {
        let packages = owner.client.appIdentifiers(Self.packageNameKind)
        guard let token = subscription.readBackKey,
            let package = subscription.appIdentifier.flatMap({ packages.contains($0) ? $0 : nil })
                ?? (packages.count == 1 ? packages.first : nil)
        else {
            throw StoreVerificationError(
                code: .invalidField, reason: "SUBSCRIPTION_NOT_MANAGEABLE",
                message: "the ledger holds no purchase token of this subscription for a package of its client")
        }
        do {
            let key = try serviceAccountKey(owner.credentials)
            switch change {
            case .revoke(let refund):
                try await api.revokeSubscription(
                    package: package, token: token, refund: refund == .full ? .full : .prorated, key: key)
                return nil
            case .cancel:
                try await api.cancelSubscription(package: package, token: token, key: key)
                return nil
            case .deferRenewal(let days):
                // Google defers only the subscription as last read: its etag comes with it.
                let current = try await api.subscriptionPurchaseV2(package: package, token: token, key: key)
                guard let etag = current.etag else {
                    throw GoogleAPIErrors.malformed("subscriptionsv2.get answered without the etag a deferral needs")
                }
                let answer = try await api.deferSubscription(
                    package: package, token: token, seconds: Int64(days) * 86_400, etag: etag, key: key)
                let items = answer.itemExpiryTimeDetails ?? []
                let item = items.first { $0.productId == subscription.productID } ?? items.first
                return GoogleTime.rfc3339(item?.expiryTime)
            }
        } catch let error as StoreAPIError {
            logger.warning(
                "Google Play refused a subscription change",
                [
                    "client.id": owner.client.clientID, "package": package, "change": change.auditAction,
                    "problem": error.message,
                ])
            throw error.verificationError
        }
    }
}
