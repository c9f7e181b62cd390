import Foundation
public import ReceiptCore

/// A quiet subscription read back from RVS with the user and receipt it was recorded with, and
/// recorded as the notification a push would have been: renewed (a later renewal date), ended, or
/// refunded, as RVS reads it now.
extension AmazonAppstoreProvider: SubscriptionReading {
    /// What RVS needs to read a receipt again, kept with the subscription.
    struct ReadBackKey: Codable {
        let user: String
        let receipt: String

        var encoded: String? { (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } }

        init(user: String, receipt: String) {
            self.user = user
            self.receipt = receipt
        }

        init?(_ text: String?) {
            guard let text, let key = try? JSONDecoder().decode(Self.self, from: Data(text.utf8)) else { return nil }
            self = key
        }
    }

    public func readBack(
        _ subscription: QuietSubscription, owner: ClientWithStoreCredentials
    ) async throws -> StoreNotification? {
        let packages = owner.client.appIdentifiers(Self.packageNameKind)
        guard let key = ReadBackKey(subscription.readBackKey),
            let package = subscription.appIdentifier.flatMap({ packages.contains($0) ? $0 : nil })
                ?? (packages.count == 1 ? packages.first : nil)
        else { return nil }
        let purchase: VerifiedPurchase
        do {
            let secret = try Self.sharedSecret(owner.credentials)
            purchase = try await lookUp(
                receiptID: key.receipt, userID: key.user, secret: secret, environments: [subscription.environment],
                package: package, deadline: .now + Self.notificationBudget)
        } catch  where error.kind == .notFound || error.kind == .refused {
            return nil
        } catch {
            throw SubscriptionReadFailed(
                "subscription \(subscription.originalTransactionID) not read back from RVS: \(error.message)"
                    + (error.isRetryable ? "; the next run asks again" : ""),
                storeWide: error.kind == .unavailable)
        }
        guard purchase.dateOutOfRange == nil,
            let event = Self.event(claimed: "SUBSCRIPTION_RENEWED", purchase: purchase, now: now())
        else { return nil }
        let state = "\(event.kind)"
        let expires = purchase.expiresDate.map { String(Int64($0.timeIntervalSince1970 * 1000)) } ?? "-"
        var stored = StoreNotification(
            store: store,
            notificationID: "rvs-read-back:\(subscription.environment.rawValue):\(key.receipt):\(expires):\(state)",
            type: "RVS_READ_BACK", subtype: state, environment: purchase.environment, appIdentifier: package,
            transactionID: purchase.transactionID, originalTransactionID: purchase.originalTransactionID,
            productID: purchase.productID,
            signedAt: now(),
            decodedJSON: try JSONEncoder().encode(
                ReadBackFacts(
                    receiptId: key.receipt, productId: purchase.productID,
                    expiresMillis: purchase.expiresDate.map { Int64($0.timeIntervalSince1970 * 1000) },
                    state: state)))
        stored.event = event
        return stored
    }

    struct ReadBackFacts: Encodable {
        let receiptId: String
        let productId: String?
        let expiresMillis: Int64?
        let state: String
    }
}
