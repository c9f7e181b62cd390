import Foundation
import OpenSSLCrypto
public import ReceiptCore

extension GooglePlayProvider {
    /// A real-time developer notification pushed by Pub/Sub. Authenticated by Google's OIDC token
    /// (when the audience and service account are configured) or the shared `?token=`; then,
    /// since a notification is a hint and not proof, the purchase is fetched with the owning
    /// client's key and the ledger changes only as Google's answer shows. Deduplicated on Pub/Sub's
    /// `messageId`, except voids that Google confirms (pushed as voided purchases or as subscription
    /// revocations): on `voided:<order id>`, shared with the voided-purchases poll, so a refund
    /// learned several ways is applied once.
    public func receiveNotification(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> StoreNotification {
        try await authenticate(request)
        guard let push = try? JSONDecoder().decode(PubSubPush.self, from: request.body), let message = push.message,
            let id = message.messageId ?? message.message_id, !id.isEmpty, id.count <= 200,
            let data = message.data.flatMap(Base64.decodeLenient),
            let rtdn = try? JSONDecoder().decode(DeveloperNotification.self, from: data)
        else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD",
                message:
                    "body must be a Pub/Sub push: message.messageId and message.data (base64 JSON of a developer notification)"
            )
        }
        let package = rtdn.packageName ?? ""
        let eventTime = GoogleTime.millis(rtdn.eventTimeMillis)
        // Kept for support exactly as decoded; a notification that cannot be kept is not taken.
        let decoded = try JSONEncoder.sortedForStorage.encode(rtdn.redacted)
        func notification(
            _ id: String, type: String, subtype: String? = nil, event: StoreEvent, token: String?
        ) -> StoreNotification {
            var stored = StoreNotification(
                store: store, notificationID: id, type: type, subtype: subtype,
                environment: event.purchase?.environment,
                appIdentifier: package.isEmpty ? nil : package, transactionID: event.purchase?.transactionID,
                originalTransactionID: event.purchase?.originalTransactionID, productID: event.purchase?.productID,
                signedAt: eventTime, decodedJSON: decoded)
            stored.event = event
            return stored
        }
        if rtdn.testNotification != nil {
            // Play Console's "send test notification": answered 200, kept for support, no ledger change.
            return notification(id, type: "TEST_NOTIFICATION", event: StoreEvent(kind: .test), token: nil)
        }
        guard registered.appIdentifiers.contains(package) else {
            // Genuine, but for no app of ours: kept, nothing applied (Pub/Sub must not retry it forever).
            return notification(id, type: "UNKNOWN_PACKAGE", event: StoreEvent(kind: .other), token: nil)
        }
        if let sub = rtdn.subscriptionNotification, let token = sub.purchaseToken {
            let type = (sub.notificationType ?? SubscriptionNotificationType(rawValue: 0)).name
            let outcome = try await pushedSubscriptionChange(
                sub, type: type, token: token, package: package, eventTime: eventTime, request: request)
            return notification(
                outcome.id ?? id, type: outcome.type, subtype: outcome.subtype, event: outcome.event, token: token)
        }
        if let product = rtdn.oneTimeProductNotification, let token = product.purchaseToken {
            let type = (product.notificationType ?? OneTimeNotificationType(rawValue: 0)).name
            var evidence = GooglePlayEvidence(purchaseToken: token)
            evidence.productID = product.sku
            let purchase = try await fetchForEvent(
                evidence, package: package, access: try await eventAccess(package: package, request: request))
            // Purchased: recorded when the game server verifies it. Canceled: a pending purchase
            // that was never paid, so never delivered; nothing to claw back.
            return notification(
                id, type: type,
                event: StoreEvent(
                    kind: product.notificationType == .purchased ? .oneTimeCharge : .other, purchase: purchase),
                token: token)
        }
        if let voided = rtdn.voidedPurchaseNotification, let token = voided.purchaseToken, let orderID = voided.orderId
        {
            let outcome = try await pushedVoid(
                voided, token: token, orderID: orderID, package: package, eventTime: eventTime, request: request)
            return notification(outcome.id ?? id, type: outcome.type, event: outcome.event, token: token)
        }
        if let review = rtdn.pendingRefundReviewNotification, let token = review.pendingRefundToken, !token.isEmpty,
            token.count <= 4096,
            let orderID = review.orderId, !orderID.isEmpty
        {
            // A push dated in the future does not move the deadline past what Google gives.
            let event = Self.pendingRefundReview(
                review, token: token, orderID: orderID, package: package, eventTime: min(eventTime ?? now(), now()))
            var stored = notification(
                id, type: "PENDING_REFUND_REVIEW", subtype: review.refundReason.map(String.init), event: event,
                token: nil)
            // The raw push is kept without the token too: it is needed only until the answer goes.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            stored.rawBody = try? encoder.encode([
                "message": ["messageId": id, "data": decoded.base64EncodedString()]
            ])
            return stored
        }
        return notification(id, type: "UNKNOWN", event: StoreEvent(kind: .other), token: nil)
    }

    private func authenticate(_ request: NotificationRequest) async throws {
        if await push.isConfigured, let header = request.headers["authorization"],
            header.lowercased().hasPrefix("bearer ")
        {
            try await push.check(bearer: String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces))
            return
        }
        if let expected = configuration.pushToken {
            guard let given = request.query["token"], ConstantTime.equals(Data(given.utf8), Data(expected.utf8)) else {
                throw NotificationRejection(
                    .forged, reason: "INVALID_PUSH_TOKEN", message: "the push token is missing or wrong")
            }
            return
        }
        if await push.isConfigured {
            throw NotificationRejection(
                .forged, reason: "INVALID_PUSH_TOKEN", message: "an authenticated push must carry Google's bearer token"
            )
        }
        throw NotificationRejection(
            .forged, reason: "PUSH_AUTH_NOT_CONFIGURED",
            message: "set RECEIPTGATE_GOOGLE_PUSH_AUDIENCE and _PUSH_SERVICE_ACCOUNT, or RECEIPTGATE_GOOGLE_PUSH_TOKEN")
    }

    /// The owning client's key (else the service's) and its consume setting, for Google calls a notification makes.
    func eventAccess(
        package: String, request: NotificationRequest
    ) async throws -> EventAccess {
        let owner = try await request.owner(package)
        let key: ServiceAccountKey
        do throws(StoreAPIError) {
            key = try serviceAccountKey(owner?.credentials ?? [:])
        } catch {
            logger.warning(
                "a Google Play notification cannot be checked without a service-account key",
                ["package": package, "problem": error.message])
            throw NotificationRejection(
                .retryable, reason: error.reason,
                message: "the purchase could not be fetched from Google now")
        }
        return EventAccess(
            key: key, consume: owner?.client.setting(Setting.consume) == "on", client: owner?.client.clientID)
    }

    /// What Google calls made for a notification use: the owner's key, its consume setting, its id.
    struct EventAccess: Sendable {
        let key: ServiceAccountKey
        let consume: Bool
        let client: String?
    }

    /// The purchase as Google has it now; nil if Google no longer knows it. Google being
    /// unreachable makes Pub/Sub send the notification again (503).
    func fetchForEvent(
        _ evidence: GooglePlayEvidence, package: String, access: EventAccess
    ) async throws -> VerifiedPurchase? {
        do {
            return try await fetch(
                evidence, package: package, key: access.key, consume: access.consume, client: access.client,
                lenient: true)
        } catch let error as StoreAPIError where error.kind == .notFound || error.kind == .refused {
            return nil
        } catch let error as StoreAPIError {
            logger.warning(
                "a Google Play notification's purchase could not be fetched",
                ["package": package, "problem": error.message])
            throw NotificationRejection(
                .retryable, reason: error.reason,
                message: "the purchase could not be fetched from Google now")
        }
    }

    /// The voided order as a refunded purchase: the fetched purchase when Google still has it,
    /// else what the void itself says (production assumed: only the order id is known then).
    static func voided(
        _ fetched: VerifiedPurchase?, orderID: String, token: String, package: String, at date: Date, reasonCode: Int?,
        refund: RefundDetail = RefundDetail()
    ) throws -> VerifiedPurchase {
        var purchase = try fetched ?? base(orderID: orderID, token: token, package: package, test: false)
        purchase.transactionID = orderID
        purchase.orderID = orderID
        if purchase.originalTransactionID == nil { purchase.originalTransactionID = firstOrder(orderID) }
        purchase.revocationDate = date
        purchase.revocationReasonCode = reasonCode
        purchase.revocationReason = reasonCode.flatMap { voidedReasons[$0] } ?? "refunded"
        purchase.refund = refund
        return purchase
    }

    /// What a void says of its share: Google's refund type (full, quantity-based partial; another
    /// number kept as it came) and how many of the purchase's quantity were voided.
    static func refund(type: RefundType?, voidedQuantity: Int?) -> RefundDetail {
        let name: String? =
            switch type {
            case .full?: "FULL_REFUND"
            case .quantityBasedPartial?: "QUANTITY_BASED_PARTIAL_REFUND"
            case let other?: String(other.rawValue)
            case nil: nil
            }
        let partial: Bool? =
            switch type {
            case .full?: false
            case .quantityBasedPartial?: true
            default: nil
            }
        return RefundDetail(storeType: name, storeSaysPartial: partial, quantity: voidedQuantity)
    }

    static let voidedReasons: [Int: String] = [
        0: "other", 1: "remorse", 2: "not_received", 3: "defective", 4: "accidental_purchase",
        5: "fraud", 6: "friendly_fraud", 7: "chargeback",
    ]
}

extension JSONEncoder {
    static var sortedForStorage: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
