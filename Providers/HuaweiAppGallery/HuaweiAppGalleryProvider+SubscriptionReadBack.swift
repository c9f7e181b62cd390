import Foundation
public import ReceiptCore

/// A quiet subscription read back from the subscription service (`/sub/applications/v2/purchases/get`)
/// by the subscription id, token and site it was recorded with, its signature checked as on the
/// verify path, then recorded as the notification a push would have been: a renewal, a billing
/// issue, a refund or an end.
extension HuaweiAppGalleryProvider: SubscriptionReading {
    public func readBack(
        _ subscription: QuietSubscription, owner: ClientWithStoreCredentials
    ) async throws -> StoreNotification? {
        guard let encoded = subscription.readBackKey,
            let key = try? JSONDecoder().decode(ReadBackKey.self, from: Data(encoded.utf8))
        else { return nil }  // recorded before keys were kept
        var evidence = HuaweiEvidence(purchaseToken: key.token)
        evidence.subscriptionID = key.subscriptionID
        evidence.kind = 2
        var purchase: VerifiedPurchase
        do {
            let access = try Self.access(client: owner.client, credentials: owner.credentials)
            purchase = try await fetch(
                evidence, productID: subscription.productID, access: access,
                registered: Set(owner.client.appIdentifiers(Self.packageNameKind)), lenient: true, deadline: nil,
                site: key.site)
        } catch let error as StoreAPIError {
            switch error.kind {
            case .unavailable, .malformedAnswer:
                throw SubscriptionReadFailed(
                    "subscription \(subscription.originalTransactionID) not read back: \(error); the next run asks again",
                    retryAfter: error.retryAfter, storeWide: true)
            case .credentialsRefused, .notConfigured:
                // The client's app id or secret: its other subscriptions wait until the operator fixes it.
                throw SubscriptionReadFailed(
                    "subscription \(subscription.originalTransactionID) not read back: \(error.message)",
                    storeWide: false)
            case .notFound, .refused, .forged:
                // Huawei forgot or refuses this token (code 6 names the token, not the key), or its
                // answer is not signed by the app's key: nothing to learn, nothing believed.
                return nil
            }
        } catch is StoreVerificationError {
            return nil  // another package or product than the ledger's
        }
        purchase.originalTransactionID = subscription.originalTransactionID
        guard purchase.environment == subscription.environment, purchase.dateOutOfRange == nil,
            let (state, event) = readBackState(purchase)
        else { return nil }
        let facts = ReadBack(
            state: state, orderId: purchase.transactionID, productId: purchase.productID,
            expirationDate: purchase.expiresDate.map { Int64($0.timeIntervalSince1970 * 1000) },
            autoRenewing: purchase.autoRenews)
        var stored = StoreNotification(
            store: store,
            notificationID:
                "subscription-state:\(subscription.originalTransactionID):\(purchase.transactionID):\(state)",
            type: "SUBSCRIPTION_STATE", subtype: state, environment: purchase.environment,
            appIdentifier: purchase.appIdentifier,
            transactionID: purchase.transactionID, originalTransactionID: purchase.originalTransactionID,
            productID: purchase.productID,
            signedAt: now(), decodedJSON: try JSONEncoder.sortedForStorage.encode(facts))
        stored.event = event
        return stored
    }

    /// The subscription as Huawei reads it now: revoked is a refund, a period not yet ended the
    /// latest period, a grace period or Huawei still retrying the charge a billing issue, anything
    /// else an end. nil without an expiry date (nothing to tell them apart by).
    func readBackState(_ purchase: VerifiedPurchase) -> (String, StoreEvent)? {
        let now = now()
        let grace = purchase.storeAttributes["grace_expiration_time"].flatMap(Int64.init).flatMap(HuaweiTime.millis)
        if purchase.revocationDate != nil {
            return ("REVOKED", StoreEvent(kind: .refunded, purchase: purchase, autoRenew: false))
        }
        guard let expires = purchase.expiresDate else { return nil }
        if expires > now {
            return ("ACTIVE", StoreEvent(kind: .renewed, purchase: purchase, autoRenew: purchase.autoRenews))
        }
        if let grace, grace > now {
            return (
                "IN_GRACE_PERIOD",
                StoreEvent(
                    kind: .billingIssue, purchase: purchase, autoRenew: purchase.autoRenews, gracePeriodExpires: grace)
            )
        }
        if purchase.storeAttributes["retry_flag"] == "1" {
            return (
                "IN_BILLING_RETRY", StoreEvent(kind: .billingIssue, purchase: purchase, autoRenew: purchase.autoRenews)
            )
        }
        return ("EXPIRED", StoreEvent(kind: .expired, purchase: purchase, autoRenew: purchase.autoRenews))
    }

    /// What Huawei said, kept with the record (never the token).
    struct ReadBack: Encodable {
        let state: String
        let orderId: String
        let productId: String?
        let expirationDate: Int64?
        let autoRenewing: Bool?
    }
}
