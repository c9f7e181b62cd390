import Foundation
import JSON
import OpenSSLCrypto
public import ReceiptCore

extension XsollaProvider {
    /// One notification per purchase the webhook carries (a Web Shop order of several items gives
    /// one per item). The signature is checked with the path's client's webhook secret before
    /// anything in the body is read; a project id the body names must be one of the client's.
    public func receiveNotifications(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> [StoreNotification] {
        guard let owner = request.pathClient else {
            throw NotificationRejection(
                .malformed, reason: XsollaWebhookCode.invalidParameter,
                message: "Xsolla webhooks are received on /v1/notifications/xsolla/{client_id}")
        }
        guard let secret = owner.credentials[Setting.webhookSecret], !secret.isEmpty else {
            logger.warning(
                "an Xsolla webhook cannot be checked: the client has no --xsolla-webhook-secret",
                ["client.id": owner.client.clientID])
            // Answered for a retry: Xsolla sends it again once the operator sets the secret.
            throw NotificationRejection(
                .retryable, reason: "XSOLLA_NOT_CONFIGURED", message: "the webhook cannot be checked now")
        }
        guard
            XsollaSignature.isValid(
                authorization: request.headers["authorization"], body: request.body, secret: secret)
        else {
            throw NotificationRejection(
                .forged, reason: XsollaWebhookCode.invalidSignature,
                message: "the Authorization header is not the SHA-1 signature of the body with the project's secret key"
            )
        }
        guard let body = JSONValue(parsing: request.body)?.object,
            let type = XsollaValues.text(body["notification_type"])
        else {
            throw NotificationRejection(
                .malformed, reason: XsollaWebhookCode.invalidParameter,
                message: "the body is not an Xsolla webhook (a JSON object with notification_type)")
        }
        let projects = owner.client.appIdentifiers(Self.projectIDKind)
        let named =
            XsollaValues.text(body["settings"]?["project_id"])
            ?? XsollaValues.text(body["billing"]?["settings"]?["project_id"])
            ?? XsollaValues.text(body["project_id"])
        if let named, !projects.contains(named) {
            throw NotificationRejection(
                .malformed, reason: XsollaWebhookCode.invalidParameter,
                message: "the webhook is for Xsolla project \(named), which this client did not register")
        }
        let webhook = XsollaWebhook(type: type, body: body, raw: request.body, project: named ?? projects.first)
        switch type {
        case "user_validation":
            try await validateUser(body, owner: owner, knowsPlayer: request.knowsPlayer)
        case "payment", "order_paid":
            return try await paid(webhook, owner: owner)
        case "refund", "partial_refund", "order_canceled":
            return try await refunded(webhook, owner: owner)
        case "create_subscription", "update_subscription", "cancel_subscription", "non_renewal_subscription":
            return [try subscriptionChanged(webhook)]
        default:
            break
        }
        throw NotificationRejection(
            .ignored, reason: "NOT_A_PURCHASE_EVENT", message: "Xsolla's \(type) webhook changes no purchase")
    }

    public func receiveNotification(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> StoreNotification {
        let all = try await receiveNotifications(request, registered: registered)
        guard let first = all.first else {
            throw NotificationRejection(.ignored, reason: "NOTHING_TO_RECORD", message: "the webhook holds no purchase")
        }
        return first
    }

    /// Xsolla's `user_validation`: a player id that meets the identifier rule is valid, or, with
    /// `--xsolla-known-players-only on`, only a player the client knows. Nothing is recorded.
    private func validateUser(
        _ body: [String: JSONValue], owner: ClientWithStoreCredentials,
        knowsPlayer: @Sendable (String) async throws -> Bool
    ) async throws {
        guard let player = XsollaSale.player(body["user"]), Identifier.problem(player) == nil else {
            throw NotificationRejection(
                .malformed, reason: XsollaWebhookCode.invalidUser, message: "the user id is missing or malformed")
        }
        if owner.client.setting(Setting.knownPlayersOnly) == "on" {
            let known: Bool
            do { known = try await knowsPlayer(player) } catch {
                throw NotificationRejection(
                    .retryable, reason: "PLAYERS_UNAVAILABLE", message: "the players could not be read now")
            }
            guard known else {
                throw NotificationRejection(
                    .malformed, reason: XsollaWebhookCode.invalidUser, message: "no such player")
            }
        }
        throw NotificationRejection(.ignored, reason: "USER_VALID", message: "the player may pay")
    }

    /// `payment` and `order_paid`: each purchase claimed by the player the signed webhook names,
    /// once the report says the transaction is paid. A player id the core could not hold does not
    /// refuse it (Xsolla does not send a 400 again, and the money is taken): it is recorded
    /// unclaimed, for the operator to assign.
    private func paid(_ webhook: XsollaWebhook, owner: ClientWithStoreCredentials) async throws -> [StoreNotification] {
        let sale = webhook.type == "order_paid" ? XsollaSale(order: webhook.body) : XsollaSale(payment: webhook.body)
        guard let transactionID = sale.transactionID else {
            throw NotificationRejection(
                .malformed, reason: XsollaWebhookCode.invalidParameter, message: "the webhook names no transaction id")
        }
        if webhook.type == "payment", !sale.namesAProduct {
            // A Web Shop order's payment half (projects made before 2025 get it apart): its items
            // come with the `order_paid` that follows, which records them.
            throw NotificationRejection(
                .ignored, reason: "ITEMS_COME_WITH_THE_ORDER",
                message: "the payment lists no item; the order_paid webhook records the purchase")
        }
        if let report = try await readBack(transactionID, owner: owner) {
            if Self.isRevoked(report.status) {
                throw NotificationRejection(
                    .ignored, reason: "REFUNDED_SINCE",
                    message:
                        "Xsolla's report lists transaction \(transactionID) as \(report.status ?? ""): nothing to deliver"
                )
            }
            guard report.status == nil || report.status == "done" else {
                throw NotificationRejection(
                    .retryable, reason: "NOT_PAID_IN_REPORT_YET",
                    message:
                        "Xsolla's report lists transaction \(transactionID) as \(report.status ?? ""), not paid yet")
            }
        }
        let player = sale.player.flatMap { Identifier.problem($0) == nil ? $0 : nil }
        if player == nil {
            logger.warning(
                "an Xsolla payment names no player id ReceiptGate can hold: recorded unclaimed",
                ["transaction": transactionID, "type": webhook.type])
        }
        return sale.purchases(store: store).map { purchase in
            webhook.notification(
                store: store, id: "\(webhook.type):\(purchase.transactionID)", purchase: purchase,
                event: StoreEvent(
                    kind: purchase.kind == .autoRenewableSubscription ? .renewed : .oneTimeCharge,
                    purchase: purchase, autoRenew: purchase.kind == .autoRenewableSubscription ? true : nil,
                    claimedBy: player))
        }
    }

    /// `refund`, `partial_refund` and `order_canceled`: the purchases refunded; after a partial
    /// one the buyer keeps the purchase, marked partial with its share unknown (Xsolla's webhook
    /// does not say how much).
    private func refunded(
        _ webhook: XsollaWebhook, owner: ClientWithStoreCredentials
    ) async throws -> [StoreNotification] {
        let sale =
            webhook.type == "order_canceled" ? XsollaSale(order: webhook.body) : XsollaSale(payment: webhook.body)
        guard let transactionID = sale.transactionID else {
            throw NotificationRejection(
                .malformed, reason: XsollaWebhookCode.invalidParameter, message: "the webhook names no transaction id")
        }
        let partial = webhook.type == "partial_refund"
        // A full refund is believed once the report lists the money gone back; a partial one
        // leaves the transaction paid, so the report knowing it is all it can confirm.
        if let report = try await readBack(transactionID, owner: owner), !partial, !Self.isRevoked(report.status) {
            throw NotificationRejection(
                .retryable, reason: "NOT_REFUNDED_IN_REPORT_YET",
                message:
                    "Xsolla's report lists transaction \(transactionID) as \(report.status ?? "unknown"), not refunded")
        }
        let details = webhook.body["refund_details"] ?? webhook.body["billing"]?["refund_details"]
        let code = XsollaValues.integer(details?["code"]).map { Int(clamping: $0) }
        // A partial refund may come more than once for one transaction: each is its own news.
        let suffix = partial ? ":" + String((try? SHA256.hex(webhook.raw))?.prefix(16) ?? "") : ""
        return sale.purchases(store: store).map { refund in
            var purchase = refund
            if !partial {
                purchase.revocationDate = now()
                purchase.revocationReasonCode = code
                purchase.revocationReason = code.map(XsollaRefundCode.reason) ?? "refund"
            }
            purchase.refund = RefundDetail(
                storeType: code.map { "xsolla_refund_code_\($0)" }, storeSaysPartial: partial)
            return webhook.notification(
                store: store, id: "\(webhook.type):\(purchase.transactionID)\(suffix)", purchase: purchase,
                event: StoreEvent(kind: partial ? .partiallyRefunded : .refunded, purchase: purchase))
        }
    }

    /// The subscription webhooks: a period begun or moved, auto-renewal switched off, or the
    /// subscription ended. They name the subscription, not a transaction: the subscription's own
    /// ledger key carries them.
    private func subscriptionChanged(_ webhook: XsollaWebhook) throws -> StoreNotification {
        guard let fields = webhook.body["subscription"]?.object,
            let id = XsollaValues.text(fields["subscription_id"])
        else {
            throw NotificationRejection(
                .malformed, reason: XsollaWebhookCode.invalidParameter,
                message: "the webhook names no subscription.subscription_id")
        }
        let subscription = XsollaSale.subscription(fields)
        var purchase = VerifiedPurchase(
            store: store,
            environment: XsollaValues.flag(webhook.body["transaction"]?["dry_run"]) ? .sandbox : .production,
            transactionID: XsollaSale.subscriptionKey(id))
        purchase.originalTransactionID = XsollaSale.subscriptionKey(id)
        purchase.appIdentifier = webhook.project
        purchase.productID = subscription.planID ?? subscription.productID
        purchase.kind = .autoRenewableSubscription
        purchase.purchaseDate = subscription.created
        purchase.expiresDate = subscription.nextCharge ?? subscription.ends
        purchase.readBackKey = id
        let kind: StoreEvent.Kind
        var autoRenew: Bool?
        switch webhook.type {
        case "create_subscription": (kind, autoRenew) = (.subscribed, true)
        case "update_subscription": (kind, autoRenew) = (.renewed, subscription.ends == nil ? true : nil)
        case "non_renewal_subscription": (kind, autoRenew) = (.renewalStatusChanged, false)
        default:
            // Canceled: over now when its end has come, else it runs to its end and stops.
            let over = (subscription.ends ?? now()) <= now()
            (kind, autoRenew) = over ? (.expired, false) : (.renewalStatusChanged, false)
            if over { purchase.expiresDate = subscription.ends ?? now() }
        }
        purchase.autoRenews = autoRenew
        let stamp = [subscription.nextCharge, subscription.ends, subscription.created].compactMap { $0 }.first.map {
            String(Int64($0.timeIntervalSince1970))
        }
        return webhook.notification(
            store: store, id: "\(webhook.type):\(XsollaSale.subscriptionKey(id))" + (stamp.map { ":\($0)" } ?? ""),
            purchase: purchase, event: StoreEvent(kind: kind, purchase: purchase, autoRenew: autoRenew))
    }
}
