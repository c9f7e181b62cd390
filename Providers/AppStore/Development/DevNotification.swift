import Foundation
import OpenSSLCrypto

/// An App Store Server Notification (version 2) about a purchase `dev purchase` signed, signed by
/// the same development PKI: what Apple sends when the purchase is refunded, renewed, expires or
/// is the subject of a refund request. Shaped like Apple's `responseBodyV2DecodedPayload`.
struct DevNotification {
    enum Kind: String, CaseIterable {
        case refund, renewal, expired
        case consumptionRequest = "consumption-request"
    }

    let kind: Kind
    /// The transaction as it was signed, found by its id.
    let purchase: DevPurchase.Payload

    struct Signed {
        /// The `signedPayload` to post.
        let signedPayload: String
        /// The transaction the notification carries (a renewal's is a new one).
        let transaction: DevPurchase.Payload
        let notificationType: String
    }

    struct Problem: Error, CustomStringConvertible { let description: String }

    func signed(with pki: DevPKI, at now: Date = Date()) throws -> Signed {
        let millis = Int64(now.timeIntervalSince1970 * 1000)
        let subscription = purchase.expiresDate != nil
        var transaction = purchase
        transaction.signedDate = millis
        var renewal: RenewalInfo?
        let type: String, subtype: String?
        switch kind {
        case .refund:
            (type, subtype) = ("REFUND", nil)
            transaction.revocationDate = millis
            transaction.revocationReason = 0
        case .renewal:
            guard subscription else {
                throw Problem(description: "only a subscription renews (dev purchase --type auto_renewable)")
            }
            (type, subtype) = ("DID_RENEW", nil)
            transaction.transactionId = DevPurchase.randomTransactionID()
            transaction.webOrderLineItemId = transaction.transactionId
            transaction.purchaseDate = millis
            transaction.expiresDate = millis + 30 * 86_400_000
            transaction.transactionReason = "RENEWAL"
            renewal = RenewalInfo(of: transaction, autoRenewStatus: 1, expirationIntent: nil, at: millis)
        case .expired:
            guard subscription else {
                throw Problem(description: "only a subscription expires (dev purchase --type auto_renewable)")
            }
            (type, subtype) = ("EXPIRED", "VOLUNTARY")
            transaction.expiresDate = min(transaction.expiresDate ?? millis, millis - 1000)
            renewal = RenewalInfo(of: transaction, autoRenewStatus: 0, expirationIntent: 1, at: millis)
        case .consumptionRequest:
            (type, subtype) = ("CONSUMPTION_REQUEST", nil)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = JWSHeader(x5c: pki.x5c)
        func sign(_ value: some Encodable) throws -> String {
            try CompactJWS.sign(payload: try encoder.encode(value), header: header, key: pki.leafKey)
        }
        let data = NotificationData(
            bundleId: transaction.bundleId, environment: transaction.environment,
            signedTransactionInfo: try sign(transaction), signedRenewalInfo: try renewal.map { try sign($0) },
            status: subscription ? (kind == .expired ? 2 : 1) : nil,
            consumptionRequestReason: kind == .consumptionRequest ? "UNINTENDED_PURCHASE" : nil)
        let notification = NotificationPayload(
            notificationType: type, subtype: subtype, notificationUUID: UUID().uuidString.lowercased(), data: data,
            signedDate: millis)
        return Signed(signedPayload: try sign(notification), transaction: transaction, notificationType: type)
    }

    struct NotificationPayload: Encodable {
        let notificationType: String, subtype: String?, notificationUUID: String
        let data: NotificationData
        var version = "2.0"
        let signedDate: Int64
    }

    struct NotificationData: Encodable {
        let bundleId: String, environment: String
        let signedTransactionInfo: String, signedRenewalInfo: String?
        /// A subscription's status: 1 active, 2 expired.
        let status: Int?
        let consumptionRequestReason: String?
    }

    struct RenewalInfo: Encodable {
        let originalTransactionId: String, autoRenewProductId: String, productId: String
        let autoRenewStatus: Int, expirationIntent: Int?
        let environment: String, signedDate: Int64, recentSubscriptionStartDate: Int64, renewalDate: Int64?

        init(of transaction: DevPurchase.Payload, autoRenewStatus: Int, expirationIntent: Int?, at millis: Int64) {
            originalTransactionId = transaction.originalTransactionId
            autoRenewProductId = transaction.productId
            productId = transaction.productId
            self.autoRenewStatus = autoRenewStatus
            self.expirationIntent = expirationIntent
            environment = transaction.environment
            signedDate = millis
            recentSubscriptionStartDate = transaction.originalPurchaseDate
            renewalDate = autoRenewStatus == 1 ? transaction.expiresDate : nil
        }
    }
}
