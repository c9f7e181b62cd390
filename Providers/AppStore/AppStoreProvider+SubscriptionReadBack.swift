import Foundation
public import ReceiptCore

/// A quiet subscription read back with Get All Subscription Statuses: Apple's latest signed
/// transaction and renewal info for it, each proven like any signed data before a field is read,
/// then recorded as the notification a push would have been.
extension AppStoreProvider: SubscriptionReading {
    public func readBack(
        _ subscription: QuietSubscription, owner: ClientWithStoreCredentials
    ) async throws -> StoreNotification? {
        let bundles = owner.client.appIdentifiers(Self.bundleIDKind)
        // The app it was bought in, or the client's only one; the API token is per bundle id.
        guard
            let bundleID = subscription.appIdentifier.flatMap({ bundles.contains($0) ? $0 : nil })
                ?? (bundles.count == 1 ? bundles.first : nil),
            let api = configuration?.serverAPIClient(bundleID: bundleID, http: http, now: now)
        else { return nil }
        let environment = Self.appStoreEnvironment(subscription.environment)
        let statuses: AppStoreServerAPIClient.SubscriptionStatuses
        do {
            statuses = try await api.subscriptionStatuses(subscription.originalTransactionID, environment: environment)
        } catch  where error.kind == .unavailable || error.kind == .credentialsRefused {
            throw SubscriptionReadFailed(
                "subscription \(subscription.originalTransactionID) not read back: \(error.operatorHelp)",
                retryAfter: error.retryAfter, storeWide: error.kind == .unavailable)
        } catch {
            return nil  // Apple does not know it (4040010), or refuses the id: nothing to learn
        }
        let latest = statuses.data?.lazy.compactMap { $0.lastTransactions }.joined()
            .first { $0.originalTransactionId == subscription.originalTransactionID }
        guard let latest, let status = latest.status, let signed = latest.signedTransactionInfo else { return nil }
        let expectations = AppStoreExpectations(bundleIDs: [bundleID], environments: [environment])
        let transaction: JWSTransactionDecodedPayload, renewal: JWSRenewalInfoDecodedPayload?
        do {
            transaction = try await verifyTransaction(signed, expecting: expectations)
            renewal = try latest.signedRenewalInfo.map { try verifier.verifyRenewalInfo($0, expecting: expectations) }
        } catch let error as AppStoreVerificationError where error.isRetryable {
            throw SubscriptionReadFailed(
                "subscription \(subscription.originalTransactionID) not read back: revocation check unavailable: \(error.message)",
                storeWide: true)
        } catch {
            return nil  // not Apple's signature, or not this app's: nothing in it is believed
        }
        guard transaction.originalTransactionId == subscription.originalTransactionID,
            let transactionID = transaction.transactionId,
            let kind = Self.eventKind(status, ownership: transaction.inAppOwnershipType)
        else { return nil }
        let purchase = try Self.purchase(from: transaction)
        guard purchase.dateOutOfRange == nil else { return nil }
        let name = Self.statusNames[status.rawValue] ?? String(status.rawValue)
        var stored = StoreNotification(
            store: store,
            notificationID:
                "subscription-status:\(subscription.environment.rawValue):\(subscription.originalTransactionID):\(transactionID):\(name)",
            type: "SUBSCRIPTION_STATUS", subtype: name, environment: subscription.environment, appIdentifier: bundleID,
            transactionID: transactionID, originalTransactionID: subscription.originalTransactionID,
            productID: transaction.productId,
            signedAt: now(),
            decodedJSON: try JSONEncoder.sortedForStorage.encode(
                ReadBack(status: status.rawValue, transaction: transaction, renewalInfo: renewal)))
        stored.rawBody = try? JSONEncoder.sortedForStorage.encode(
            SignedStatus(
                status: status.rawValue, originalTransactionId: subscription.originalTransactionID,
                signedTransactionInfo: signed, signedRenewalInfo: latest.signedRenewalInfo))
        stored.event = StoreEvent(
            kind: kind, purchase: purchase, autoRenew: renewal?.autoRenewStatus.map { $0 == .on },
            gracePeriodExpires: renewal?.gracePeriodExpiresDate?.date)
        return stored
    }

    /// Apple's subscription status as the ledger event it stands for: active is the latest
    /// period (a renewal if it is new), in billing retry or grace a billing issue, revoked a refund
    /// (or, for a family member, a revocation). nil for a status Apple adds later.
    static func eventKind(_ status: SubscriptionStatus, ownership: InAppOwnershipType?) -> StoreEvent.Kind? {
        switch status {
        case .active: .renewed
        case .expired: .expired
        case .billingRetry, .billingGracePeriod: .billingIssue
        case .revoked: ownership == .familyShared ? .revoked : .refunded
        default: nil
        }
    }

    static let statusNames = [1: "ACTIVE", 2: "EXPIRED", 3: "BILLING_RETRY", 4: "BILLING_GRACE_PERIOD", 5: "REVOKED"]

    struct ReadBack: Encodable {
        let status: Int
        let transaction: JWSTransactionDecodedPayload
        let renewalInfo: JWSRenewalInfoDecodedPayload?
    }

    /// Apple's own words for the subscription (the status entry, signed data as sent).
    struct SignedStatus: Encodable {
        let status: Int
        let originalTransactionId: String
        let signedTransactionInfo: String
        let signedRenewalInfo: String?
    }
}
