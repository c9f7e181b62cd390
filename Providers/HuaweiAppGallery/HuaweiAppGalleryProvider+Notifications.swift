import Foundation
import OpenSSLCrypto
public import ReceiptCore

extension HuaweiAppGalleryProvider {
    /// A notification (v2) from Huawei IAP. The app it is for is found by its `applicationId`
    /// among the clients that registered a Huawei package; a subscription event's signature is
    /// checked with that client's IAP key before anything in it is read. Either way the
    /// notification is a hint: the purchase is read again from Huawei with the client's
    /// credentials, and the ledger changes only as that signed answer shows. A refund or cancel
    /// the answer does not show yet is answered for a retry, so Huawei sends it again once it
    /// does; any other event the answer does not back is kept as `<type>_UNCONFIRMED` and changes
    /// nothing. An order event is unsigned, so anyone may send one: one naming a purchase Huawei
    /// does not know for this client is recorded nowhere (`ignored`), and its re-read goes through
    /// `notificationReads`, apart from the signed events' `signedNotificationReads`.
    public func receiveNotification(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> StoreNotification {
        guard let body = try? JSONDecoder().decode(HuaweiNotification.self, from: request.body),
            let applicationID = body.applicationId?.raw,
            !applicationID.isEmpty, body.orderNotification != nil || body.subNotification != nil
        else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD",
                message:
                    "body must be a Huawei IAP notification (v2): applicationId and orderNotification or subNotification"
            )
        }
        guard let owner = try await request.ownerBySetting(Setting.appID, applicationID) else {
            // No key to check it with: nothing it says can be believed, or kept.
            throw NotificationRejection(
                .forged, reason: "UNKNOWN_APPLICATION", message: "no client registered Huawei app \(applicationID)")
        }
        let access: Access
        do { access = try Self.access(client: owner.client, credentials: owner.credentials) } catch {
            logger.warning(
                "a Huawei notification cannot be checked for this client",
                ["client.id": owner.client.clientID, "problem": error.message])
            throw NotificationRejection(
                .retryable, reason: error.reason, message: "the notification cannot be checked now")
        }
        let apps = Set(owner.client.appIdentifiers(Self.packageNameKind))
        if let sub = body.subNotification {
            return try await subscriptionEvent(
                sub, access: access, apps: apps, signedAt: HuaweiTime.millis(body.notifyTime))
        }
        return try await orderEvent(
            body.orderNotification ?? .init(), access: access, apps: apps, notifyTime: body.notifyTime)
    }

    private func subscriptionEvent(
        _ sub: HuaweiNotification.Subscription, access: Access, apps: Set<String>,
        signedAt: Date?
    ) async throws -> StoreNotification {
        guard let signed = sub.statusUpdateNotification, !signed.isEmpty else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD", message: "subNotification.statusUpdateNotification is missing")
        }
        guard access.key.isValid(signature: sub.notificationSignature, for: signed, algorithm: sub.signatureAlgorithm)
        else {
            throw NotificationRejection(
                .forged, reason: "INVALID_SIGNATURE",
                message: "the notification's signature does not match the app's IAP key")
        }
        guard let status = try? JSONDecoder().decode(StatusUpdateNotification.self, from: Data(signed.utf8)),
            let token = status.purchaseToken,
            let subscriptionID = status.subscriptionId
        else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD",
                message: "statusUpdateNotification lacks purchaseToken or subscriptionId")
        }
        let type =
            status.notificationType.flatMap { StatusUpdateNotification.types[$0] }
            ?? "SUBSCRIPTION_\(status.notificationType.map(String.init) ?? "?")"
        var evidence = HuaweiEvidence(purchaseToken: token)
        evidence.subscriptionID = subscriptionID
        evidence.kind = 2
        // Signed, so only Huawei makes new ones; a genuine one sent again is answered from memory
        // once an answer settled it.
        let key = "sub:\(access.app.id):" + (try SHA256.hex(Data(signed.utf8)))
        let purchase = try await reread(evidence, productID: nil, access: access, apps: apps, key: key, signed: true)
        let kind: StoreEvent.Kind
        if purchase == nil {
            kind = .other
        } else if purchase?.revocationDate != nil {
            kind = .refunded
        } else if let expires = purchase?.expiresDate, expires <= now() {
            kind = .expired
        } else {
            kind =
                switch status.notificationType {
                case 0?: .subscribed
                case 2?, 3?, 7?, 13?: .renewed
                case 4?, 5?, 6?: .renewalStatusChanged
                case 8?: .billingIssue
                default: .other
                }
        }
        if purchase != nil, status.notificationType == 1, kind != .refunded, kind != .expired {
            // A cancel the answer does not show (no revocation, not expired) may be one Huawei's
            // subscription service does not show yet: sent again, it is read again.
            throw NotificationRejection(
                .retryable, reason: "CANCEL_NOT_SHOWN", message: "Huawei does not show this subscription canceled yet")
        }
        let confirmed = purchase != nil
        if confirmed { await signedNotificationReads.settle(key) }
        // Unconfirmed news is kept under an id of its own: when Huawei's answer backs it later,
        // the same notification sent again is applied, not taken for the one already kept.
        let id = "sub:" + (try SHA256.hex(Data(signed.utf8))) + (confirmed ? "" : ":unconfirmed")
        // Kept for support without the purchase token (a bearer secret of a kind).
        var kept = status
        kept.purchaseToken = nil
        let decoded = String(decoding: try JSONEncoder.sortedForStorage.encode(kept), as: UTF8.self)
        return try notification(
            id: id, type: confirmed ? type : type + "_UNCONFIRMED",
            event: StoreEvent(
                kind: confirmed ? kind : .other, purchase: confirmed ? purchase : nil, autoRenew: purchase?.autoRenews),
            purchase: purchase, signedAt: signedAt, decoded: decoded)
    }

    private func orderEvent(
        _ order: HuaweiNotification.Order, access: Access, apps: Set<String>, notifyTime: Int64?
    ) async throws -> StoreNotification {
        guard let token = order.purchaseToken, let productID = order.productId,
            (try? HuaweiEvidence.bareToken(token)) != nil
        else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD", message: "orderNotification lacks purchaseToken or productId")
        }
        let type =
            order.notificationType == 1
            ? "PAYMENT_SUCCESS"
            : order.notificationType == 2
                ? "REFUND_SUCCESS"
                : "ORDER_\(order.notificationType.map(String.init) ?? "?")"
        // Types Huawei does not document change nothing; they share one id per token, so made-up
        // types for a genuine token keep one row, not one each.
        let typeInID = order.notificationType.flatMap { [1, 2].contains($0) ? String($0) : nil } ?? "other"
        // What the notification claims is part of the question: an answer read for one claim
        // never answers another.
        let key = "order:\(access.app.id):\(typeInID):" + (try SHA256.hex(Data((token + "\u{0}" + productID).utf8)))
        guard
            let purchase = try await reread(
                HuaweiEvidence(purchaseToken: token), productID: productID, access: access, apps: apps, key: key,
                signed: false)
        else {
            // Unsigned and naming nothing Huawei has for this client: recorded nowhere, so a
            // sender of made-up tokens grows nothing, and answered 200 so a genuine sender stops.
            await notificationReads.settle(key)
            throw NotificationRejection(
                .ignored, reason: "PURCHASE_UNKNOWN",
                message:
                    "Huawei shows no purchase of this app to record for the notification's purchaseToken and productId "
                    + "(unknown, another app's, or not completed)")
        }
        let kind: StoreEvent.Kind? =
            switch (order.notificationType, purchase.revocationDate != nil) {
            case (2?, true): .refunded
            case (1?, false): .oneTimeCharge
            case (2?, false):
                // Made up, or Huawei's order service does not show the refund yet: answered for a
                // retry and kept nowhere, so Huawei's own push (sent again until it is backed) is
                // what records it.
                throw NotificationRejection(
                    .retryable, reason: "REFUND_NOT_SHOWN", message: "Huawei does not show this purchase refunded yet")
            default: nil
            }
        if kind != nil { await notificationReads.settle(key) }
        let id =
            "order:\(typeInID):" + String(try SHA256.hex(Data(token.utf8)).prefix(40))
            + (kind == nil ? ":unconfirmed" : "")
        let decoded = String(
            decoding: try JSONEncoder.sortedForStorage.encode([
                "notificationType": order.notificationType.map(String.init) ?? "",
                "productId": productID,
            ]), as: UTF8.self)
        return try notification(
            id: id, type: kind == nil ? type + "_UNCONFIRMED" : type,
            event: StoreEvent(kind: kind ?? .other, purchase: kind == nil ? nil : purchase), purchase: purchase,
            signedAt: HuaweiTime.millis(notifyTime), decoded: decoded)
    }

    /// The purchase as Huawei has it now; nil if Huawei no longer knows it or refuses it. Huawei
    /// being unreachable makes Huawei send the notification again (503). Asked through the client
    /// and gate of the notification's lane (`signed` or not): `key` names what is asked, the
    /// claim included, so the same question settled lately is answered from memory.
    private func reread(
        _ evidence: HuaweiEvidence, productID: String?, access: Access, apps: Set<String>,
        key: String, signed: Bool
    ) async throws(NotificationRejection) -> VerifiedPurchase? {
        let reader = reading(through: signed ? signedNotificationAPI : notificationAPI)
        let gate = signed ? signedNotificationReads : notificationReads
        return try await gate.purchase(key: key, app: access.app.id) {
            await reader.readOutcome(evidence, productID: productID, access: access, apps: apps)
        }
    }

    private func readOutcome(
        _ evidence: HuaweiEvidence, productID: String?, access: Access,
        apps: Set<String>
    ) async -> HuaweiNotificationReadGate.Outcome {
        do {
            return .success(
                try await fetch(
                    evidence, productID: productID, access: access, registered: apps, lenient: true, deadline: nil))
        } catch let error as StoreAPIError
            where error.kind == .notFound || (error.kind == .refused && error.huaweiCode == .criticalError)
        {
            // A token Huawei does not know (or not as this app's): nothing to record. Any other
            // refusal (an invalid parameter, an abnormal account, a code Huawei has not documented)
            // may be this service's or the app's setup: answered 503 below, so a genuine
            // notification is sent again rather than acknowledged and lost.
            return .success(nil)
        } catch let error as StoreAPIError where error.kind == .forged {
            return .failure(
                NotificationRejection(
                    .forged, reason: "INVALID_SIGNATURE",
                    message: "Huawei's purchase data does not match the app's IAP key"))
        } catch let error as StoreAPIError {
            logger.warning("a Huawei notification's purchase could not be read", ["problem": error.message])
            return .failure(
                NotificationRejection(
                    .retryable, reason: error.reason,
                    message: "the purchase could not be read from Huawei now"))
        } catch is StoreVerificationError {
            // Another package or product, or a purchase not finished (pending, initialized) or
            // canceled without a revocation: nothing of this client's to record.
            return .success(nil)
        } catch {
            return .failure(
                NotificationRejection(
                    .retryable, reason: "HUAWEI_UNAVAILABLE", message: "the purchase could not be read from Huawei now")
            )
        }
    }

    private func notification(
        id: String, type: String, event: StoreEvent, purchase: VerifiedPurchase?, signedAt: Date?,
        decoded: String
    ) throws -> StoreNotification {
        var stored = StoreNotification(
            store: store, notificationID: id, type: type, subtype: nil, environment: purchase?.environment,
            appIdentifier: purchase?.appIdentifier, transactionID: purchase?.transactionID,
            originalTransactionID: purchase?.originalTransactionID, productID: purchase?.productID,
            signedAt: signedAt, decodedJSON: Data(decoded.utf8))
        stored.event = event
        return stored
    }
}
