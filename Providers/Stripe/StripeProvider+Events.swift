import Foundation
import ReceiptCore

extension StripeProvider {
    /// What an event comes to once its object is read back: notifications to record, or nothing
    /// (a type this provider does not follow, an object that moved no money), with why.
    enum EventOutcome: Sendable {
        case record([StoreNotification])
        case nothing(reason: String, message: String)
    }

    /// The event types this provider follows (the webhook endpoint's and the event list's).
    static let followedTypes = [
        "checkout.session.completed", "checkout.session.async_payment_succeeded", "charge.refunded",
        "charge.dispute.created", "charge.dispute.closed", "invoice.paid", "customer.subscription.created",
        "customer.subscription.updated", "customer.subscription.deleted", "customer.subscription.paused",
        "customer.subscription.resumed",
    ]

    /// An event, genuine (its signature checked, or listed by Stripe for the client's key), as the
    /// ledger's news: the object it names is read back from Stripe with the client's key (events
    /// arrive out of order, and may carry an older state or none), and only what that answer shows
    /// is recorded, under the event's id (`evt_…`, or `evt_…/li_…` per line item). An event of a
    /// connected account is read back as that account (`Stripe-Account`), and only when the
    /// account is the client's. Throws `StoreAPIError` when Stripe cannot be asked now.
    func outcome(
        of event: StripeObject, access: StripeAccess, deadline: ContinuousClock.Instant?
    ) async throws -> EventOutcome {
        guard let eventID = event.id, let type = event.string("type") else {
            return .nothing(reason: "INVALID_FIELD", message: "the event has no id or type")
        }
        let connected = event.string("account")
        if let connected, !access.accounts.contains(connected) {
            return .nothing(
                reason: "ACCOUNT_MISMATCH",
                message: "the event is for Stripe account \(connected), not one of this client's")
        }
        guard Self.followedTypes.contains(type) else {
            return .nothing(reason: "EVENT_NOT_FOLLOWED", message: "\(type) changes no purchase")
        }
        // Thin events name their object in `related_object`; snapshot events carry it in `data`.
        guard
            let objectID = event.object("data")?.object("object")?.id ?? event.object("related_object")?.id
        else {
            return .nothing(reason: "INVALID_FIELD", message: "the event names no object")
        }
        let caller = StripeAPI.Caller(apiKey: access.apiKey, connectedAccount: connected, deadline: deadline)
        let context = EventContext(
            id: eventID, type: type, created: event.date("created") ?? now(), account: access.account(named: connected),
            access: access)
        switch type {
        case "checkout.session.completed", "checkout.session.async_payment_succeeded":
            return try await checkoutCompleted(objectID, context, caller: caller)
        case "charge.refunded":
            return try await chargeRefunded(objectID, context, caller: caller)
        case "charge.dispute.created", "charge.dispute.closed":
            return try await disputeChanged(objectID, context, caller: caller)
        case "invoice.paid":
            return try await invoicePaid(objectID, context, caller: caller)
        default:
            return try await subscriptionChanged(objectID, context, caller: caller)
        }
    }

    /// What every notification of one event shares.
    struct EventContext: Sendable {
        let id: String
        let type: String
        let created: Date
        let account: String?
        let access: StripeAccess
    }

    private func checkoutCompleted(
        _ sessionID: String, _ context: EventContext, caller: StripeAPI.Caller
    ) async throws -> EventOutcome {
        let checkout = try await checkout(sessionID, caller: caller, account: context.account)
        guard checkout.isPaid else {
            return .nothing(
                reason: "PAYMENT_NOT_COMPLETE",
                message:
                    "the Checkout Session's payment_status is \(checkout.session.string("payment_status") ?? "unknown"), not paid"
            )
        }
        guard !checkout.purchases.isEmpty else {
            return .nothing(reason: "NOTHING_BOUGHT", message: "the Checkout Session holds no purchase")
        }
        let player = checkout.player
        return .record(
            checkout.purchases.map { purchase in
                let subscription = purchase.kind == .autoRenewableSubscription
                // The payment as it stands now: a sale refunded or lost since is recorded so.
                return notification(
                    context, purchase: purchase, perItem: !subscription,
                    event: StoreEvent(
                        kind: Self.saleKind(of: purchase), purchase: purchase, autoRenew: purchase.autoRenews,
                        claimedBy: player))
            })
    }

    private func chargeRefunded(
        _ chargeID: String, _ context: EventContext, caller: StripeAPI.Caller
    ) async throws -> EventOutcome {
        let charge = try await api.get("/v1/charges/\(Self.pathSafe(chargeID))", [("expand[]", "refunds")], as: caller)
        let purchases = try await purchases(paidBy: charge, caller: caller, account: context.account)
        guard !purchases.isEmpty else {
            return .nothing(
                reason: "PURCHASE_UNKNOWN", message: "the charge paid for no Checkout Session or subscription")
        }
        guard let refunded = Self.refunded(purchases, charge: charge, at: context.created) else {
            return .nothing(reason: "NOTHING_REFUNDED", message: "Stripe shows nothing of the charge refunded")
        }
        return .record(
            refunded.map {
                notification(
                    context, purchase: $0, perItem: $0.kind != .autoRenewableSubscription,
                    event: StoreEvent(kind: $0.revocationDate == nil ? .partiallyRefunded : .refunded, purchase: $0))
            })
    }

    private func disputeChanged(
        _ disputeID: String, _ context: EventContext, caller: StripeAPI.Caller
    ) async throws -> EventOutcome {
        let dispute = try await api.get("/v1/disputes/\(Self.pathSafe(disputeID))", as: caller)
        guard let chargeID = dispute.reference("charge") else {
            return .nothing(reason: "PURCHASE_UNKNOWN", message: "the dispute names no charge")
        }
        let charge = try await api.get("/v1/charges/\(Self.pathSafe(chargeID))", as: caller)
        let purchases = try await purchases(paidBy: charge, caller: caller, account: context.account)
        guard !purchases.isEmpty else {
            return .nothing(reason: "PURCHASE_UNKNOWN", message: "the disputed charge paid for nothing on record")
        }
        let opened = context.type == "charge.dispute.created"
        return .record(
            purchases.map {
                notification(
                    context, purchase: $0, perItem: $0.kind != .autoRenewableSubscription,
                    event: Self.disputeEvent(
                        dispute, purchase: $0, opened: opened, revokesOnDispute: context.access.revokesOnDispute,
                        at: context.created))
            })
    }

    private func invoicePaid(
        _ invoiceID: String, _ context: EventContext, caller: StripeAPI.Caller
    ) async throws -> EventOutcome {
        let invoice = try await api.get("/v1/invoices/\(Self.pathSafe(invoiceID))", as: caller)
        guard invoice.string("status") == "paid", let subscriptionID = Self.subscriptionID(of: invoice),
            let environment = invoice.environment
        else {
            return .nothing(reason: "PURCHASE_UNKNOWN", message: "the invoice is not a paid subscription period")
        }
        let subscription = try await api.get("/v1/subscriptions/\(Self.pathSafe(subscriptionID))", as: caller)
        guard
            var purchase = Self.periodPurchase(
                invoice: invoice, subscription: subscription, environment: environment, account: context.account)
        else { return .nothing(reason: "INVALID_FIELD", message: "the invoice has no id") }
        let first = invoice.string("billing_reason") == "subscription_create"
        let player = first ? try await subscriber(of: subscription, caller: caller) : nil
        purchase.buyer = player
        return .record([
            notification(
                context, purchase: purchase, perItem: false,
                event: StoreEvent(
                    kind: first ? .subscribed : .renewed, purchase: purchase, autoRenew: purchase.autoRenews,
                    claimedBy: player))
        ])
    }

    private func subscriptionChanged(
        _ subscriptionID: String, _ context: EventContext, caller: StripeAPI.Caller
    ) async throws -> EventOutcome {
        let subscription = try await api.get(
            "/v1/subscriptions/\(Self.pathSafe(subscriptionID))", [("expand[]", "latest_invoice")], as: caller)
        guard let environment = subscription.environment,
            let invoice = try await latestInvoice(of: subscription, caller: caller),
            let news = subscriptionNews(
                subscription, invoice: invoice, environment: environment, account: context.account)
        else {
            return .nothing(reason: "NOTHING_BOUGHT", message: "the subscription has no paid period yet")
        }
        var event = news.event
        if news.isFirstPeriod {
            event.claimedBy = try await subscriber(of: subscription, caller: caller)
            event.purchase?.buyer = event.claimedBy
        }
        return .record([notification(context, purchase: event.purchase, perItem: false, event: event)])
    }

    /// One notification of `context`'s event: its id the event's, with the line item's after a
    /// slash when one event carries several purchases.
    func notification(
        _ context: EventContext, purchase: VerifiedPurchase?, perItem: Bool, event: StoreEvent
    ) -> StoreNotification {
        let id = perItem ? "\(context.id)/\(purchase?.transactionID ?? "")" : context.id
        let kept = KeptEvent(
            id: context.id, type: context.type, account: context.account,
            created: Int64(context.created.timeIntervalSince1970),
            transaction: purchase?.transactionID, dispute: event.dispute?.id, status: event.kind.rawValue)
        var stored = StoreNotification(
            store: store, notificationID: id, type: context.type, subtype: nil, environment: purchase?.environment,
            appIdentifier: purchase?.appIdentifier, transactionID: purchase?.transactionID,
            originalTransactionID: purchase?.originalTransactionID, productID: purchase?.productID,
            signedAt: context.created, decodedJSON: kept.encoded)
        stored.event = event
        // Kept in place of the event's body, which names the buyer (e-mail, name, address).
        stored.rawBody = kept.encoded
        return stored
    }

    /// What is kept of an event for support, as its decoded form and its raw body alike: its
    /// identity and what it came to. The event's own body carries the buyer's e-mail, name and
    /// address, which the ledger has no need of.
    struct KeptEvent: Encodable {
        let id: String
        let type: String
        let account: String?
        let created: Int64
        let transaction: String?
        let dispute: String?
        let status: String

        var encoded: Data {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return (try? encoder.encode(self)) ?? Data("{}".utf8)
        }
    }
}
