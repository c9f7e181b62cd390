import Foundation
import ReceiptCore

extension AmazonAppstoreProvider {
    /// A proven Notification: the receipt it names, as RVS reads it now, for the client that owns
    /// the package. A claim RVS does not bear out (a cancellation of a receipt RVS reads as not
    /// canceled, a receipt RVS does not know) is kept as `<type>_UNCONFIRMED` and changes nothing.
    /// RVS unreachable or the owner without a usable secret: retryable (503), SNS sends it again.
    func purchaseNews(
        _ message: SNSMessage, request: NotificationRequest, registered: RegisteredApps
    ) async throws -> StoreNotification {
        guard let news = try? JSONDecoder().decode(RealTimeNotification.self, from: Data(message.message.utf8)),
            let package = news.appPackageName, let receiptID = news.receiptId, let userID = news.appUserId,
            !package.isEmpty, !receiptID.isEmpty, !userID.isEmpty
        else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD",
                message: "the notification's Message must name appPackageName, appUserId and receiptId")
        }
        let type = String((news.notificationType ?? "UNKNOWN").prefix(80))
        let decoded = try Self.keptJSON(message, news: news)
        func notification(_ type: String, _ event: StoreEvent) -> StoreNotification {
            var stored = StoreNotification(
                store: store, notificationID: message.messageID, type: type,
                subtype: event.purchase?.storeAttributes["cancel_reason"],
                environment: event.purchase?.environment, appIdentifier: package,
                transactionID: event.purchase?.transactionID,
                originalTransactionID: event.purchase?.originalTransactionID, productID: event.purchase?.productID,
                signedAt: message.timestamp, decodedJSON: decoded)
            stored.event = event
            return stored
        }
        guard registered.appIdentifiers.contains(package) else {
            // Genuine, but for no app of ours: kept, nothing applied (SNS must not retry it forever).
            return notification("UNKNOWN_PACKAGE", StoreEvent(kind: .other))
        }
        let purchase = try await reread(receiptID: receiptID, userID: userID, package: package, request: request)
        guard let purchase, let event = Self.event(claimed: type, purchase: purchase, now: now()) else {
            logger.warning(
                "an Amazon notification that RVS does not bear out was kept, not applied",
                ["package": package, "notification.type": type])
            return notification("\(type)_UNCONFIRMED", StoreEvent(kind: .other, purchase: purchase))
        }
        return notification(type, event)
    }

    /// The receipt from RVS with the owning client's secret and environments; nil when RVS does
    /// not know it for that user.
    func reread(
        receiptID: String, userID: String, package: String, request: NotificationRequest
    ) async throws -> VerifiedPurchase? {
        let owner = try await request.owner(package)
        do {
            let secret = try Self.sharedSecret(owner?.credentials ?? [:])
            let environments = owner?.client.environments ?? [.production]
            return try await lookUp(
                receiptID: receiptID, userID: userID, secret: secret, environments: environments, package: package,
                deadline: .now + Self.notificationBudget)
        } catch  where error.kind == .notFound || error.kind == .refused {
            return nil
        } catch {
            logger.warning(
                "an Amazon notification's receipt could not be read from RVS",
                ["package": package, "problem": error.message])
            throw NotificationRejection(
                .retryable, reason: error.reason,
                message: "the receipt could not be read from Amazon now")
        }
    }

    /// How long one notification may spend on RVS before SNS is asked to send it again.
    static let notificationBudget: Duration = .seconds(20)

    /// The ledger event RVS's reading supports. Refunds and expiries come from RVS alone; what the
    /// push claims only names the kind of news for a receipt still active, and a claim of an end
    /// that RVS does not show is nil (unconfirmed).
    static func event(claimed type: String, purchase: VerifiedPurchase, now: Date) -> StoreEvent? {
        let autoRenew = purchase.storeAttributes["auto_renew"].map { $0 == "true" }
        switch LedgerRules.state(of: purchase, at: now) {
        case .refunded, .revoked:
            return StoreEvent(kind: .refunded, purchase: purchase, autoRenew: autoRenew)
        case .expired:
            return StoreEvent(kind: .expired, purchase: purchase, autoRenew: autoRenew)
        case .active:
            break
        }
        let subscription = purchase.kind == .autoRenewableSubscription
        if type.contains("CANCEL") {
            // A subscription canceled to its period's end: still paid up, renewal off.
            guard subscription, autoRenew == false else { return nil }
            return StoreEvent(kind: .renewalStatusChanged, purchase: purchase, autoRenew: false)
        }
        if type.contains("EXPIRED") || type.contains("REVOKED") || type.contains("REFUND") { return nil }
        switch type {
        case "SUBSCRIPTION_PURCHASED" where subscription:
            return StoreEvent(kind: .subscribed, purchase: purchase, autoRenew: autoRenew)
        case "SUBSCRIPTION_RENEWED" where subscription:
            return StoreEvent(kind: .renewed, purchase: purchase, autoRenew: autoRenew)
        case "SUBSCRIPTION_AUTO_RENEWAL_ON", "SUBSCRIPTION_AUTO_RENEWAL_OFF":
            guard let autoRenew, autoRenew == type.hasSuffix("_ON") else { return nil }
            return StoreEvent(kind: .renewalStatusChanged, purchase: purchase, autoRenew: autoRenew)
        case "CONSUMABLE_PURCHASED", "ENTITLEMENT_PURCHASED":
            return StoreEvent(kind: .oneTimeCharge, purchase: purchase)
        default: return StoreEvent(kind: .other, purchase: purchase, autoRenew: autoRenew)
        }
    }

    /// The envelope and the decoded news, kept for support (the signature is not kept).
    static func keptJSON(_ message: SNSMessage, news: RealTimeNotification) throws -> Data {
        try JSONEncoder.sortedForStorage.encode(
            KeptNews(
                message: news, type: message.fields["Type"], messageID: message.fields["MessageId"],
                topicARN: message.fields["TopicArn"], timestamp: message.fields["Timestamp"]))
    }

    /// What `keptJSON` keeps, under SNS's names; an envelope field SNS left out is left out.
    private struct KeptNews: Encodable {
        let message: RealTimeNotification
        let type: String?
        let messageID: String?
        let topicARN: String?
        let timestamp: String?

        enum CodingKeys: String, CodingKey {
            case message = "Message", type = "Type", messageID = "MessageId", topicARN = "TopicArn",
                timestamp = "Timestamp"
        }
    }
}

extension JSONEncoder {
    /// What is kept for the ledger: keys sorted, slashes as they are (URLs stay readable).
    static var sortedForStorage: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
