import Foundation
import ReceiptCore

extension StripeProvider {
    /// What a subscription's state means for the ledger, read back from Stripe.
    struct SubscriptionNews: Sendable {
        let event: StoreEvent
        /// The first period (the invoice that created the subscription): its buyer claims it.
        let isFirstPeriod: Bool
    }

    /// The subscription's latest invoice: expanded when it was asked so, else read.
    func latestInvoice(of subscription: StripeObject, caller: StripeAPI.Caller) async throws -> StripeObject? {
        if let expanded = subscription.object("latest_invoice") { return expanded }
        guard let id = subscription.string("latest_invoice") else { return nil }
        return try await api.get("/v1/invoices/\(Self.pathSafe(id))", as: caller)
    }

    /// A subscription as it stands: `active` or `trialing` a period owned (`.subscribed` for the
    /// first, `.renewed` after), `past_due` a billing retry that keeps it owned until Stripe's
    /// next attempt, `canceled`, `unpaid`, `incomplete_expired` or `paused` an end. `incomplete`
    /// (the first payment not made) is nothing yet: nil.
    func subscriptionNews(
        _ subscription: StripeObject, invoice: StripeObject, environment: StoreEnvironment, account: String?
    ) -> SubscriptionNews? {
        guard
            var purchase = Self.periodPurchase(
                invoice: invoice, subscription: subscription, environment: environment, account: account)
        else { return nil }
        let first = invoice.string("billing_reason") == "subscription_create"
        let autoRenew = Self.autoRenews(subscription)
        let line = Self.subscriptionLine(of: invoice)
        switch subscription.string("status") {
        case "active", "trialing":
            return SubscriptionNews(
                event: StoreEvent(kind: first ? .subscribed : .renewed, purchase: purchase, autoRenew: autoRenew),
                isFirstPeriod: first)
        case "past_due":
            // The unpaid period is not owned; the subscription is, while Stripe retries.
            if invoice.string("status") != "paid", let start = line?.object("period")?.date("start") {
                purchase.expiresDate = start
            }
            return SubscriptionNews(
                event: StoreEvent(
                    kind: .billingIssue, purchase: purchase, autoRenew: autoRenew,
                    gracePeriodExpires: invoice.date("next_payment_attempt")),
                isFirstPeriod: false)
        case "canceled", "unpaid", "incomplete_expired", "paused":
            if let ended = subscription.date("ended_at"), ended < purchase.expiresDate ?? .distantFuture {
                purchase.expiresDate = ended
            } else if invoice.string("status") != "paid", let start = line?.object("period")?.date("start") {
                purchase.expiresDate = start
            }
            return SubscriptionNews(
                event: StoreEvent(kind: .expired, purchase: purchase, autoRenew: false), isFirstPeriod: false)
        default:
            return nil
        }
    }

    /// One period of a subscription as a purchase: the invoice that paid it (`in_…`) the
    /// transaction, the subscription (`sub_…`) the original transaction, the period's end the
    /// expiry. The period and product are the invoice's subscription line's (Basil moved them
    /// there from the subscription), else the subscription item's.
    static func periodPurchase(
        invoice: StripeObject, subscription: StripeObject?, environment: StoreEnvironment, account: String?
    ) -> VerifiedPurchase? {
        guard let id = invoice.id,
            let subscriptionID = subscription?.id ?? Self.subscriptionID(of: invoice)
        else { return nil }
        var purchase = VerifiedPurchase(store: .stripe, environment: environment, transactionID: id)
        purchase.originalTransactionID = subscriptionID
        purchase.appIdentifier = account
        purchase.orderID = id
        purchase.kind = .autoRenewableSubscription
        let line = subscriptionLine(of: invoice)
        let item = subscription?.list("items").first
        purchase.productID =
            line?.object("pricing")?.object("price_details")?.string("product")
            ?? item?.object("price")?.reference("product")
        let quantity = line?.integer("quantity") ?? item?.integer("quantity")
        purchase.quantity = quantity.map { Int(clamping: $0) }
        purchase.currency = StripeMoney.currency(invoice.string("currency"))
        if let currency = purchase.currency {
            purchase.priceMilliunits = unitPrice(
                decimal: line?.object("pricing")?.string("unit_amount_decimal"),
                amount: item?.object("price")?.integer("unit_amount"), total: line?.integer("amount"),
                quantity: quantity, currency: currency)
            if let line, let charge = lineCharge(line) {
                purchase.paidMilliunits = StripeMoney.milliunits(charge.paid, currency: currency)
                purchase.taxMilliunits = charge.tax.flatMap { StripeMoney.milliunits($0, currency: currency) }
            }
        }
        purchase.expiresDate = line?.object("period")?.date("end") ?? item?.date("current_period_end")
        purchase.purchaseDate =
            invoice.object("status_transitions")?.date("paid_at") ?? line?.object("period")?.date("start")
            ?? invoice.date("created")
        purchase.ownership = .purchased
        purchase.autoRenews = subscription.map(autoRenews)
        // Where the buyer is taxed for this period: the customer's address the invoice was made with.
        purchase.storefront = invoice.object("customer_address")?.string("country")?.uppercased().nilIfNotCountry
        var attributes = ["subscription": subscriptionID]
        if let customer = invoice.reference("customer") ?? subscription?.reference("customer") {
            attributes["customer"] = customer
        }
        purchase.storeAttributes = attributes
        return purchase
    }

    /// What the subscription's line of an invoice charged and the tax within it, in minor units:
    /// its `amount` less its `discount_amounts`, with its taxes (`taxes`, API versions since
    /// 2025-03-31; `tax_amounts` before) added where they were on top of the price (`exclusive`)
    /// and within it otherwise. The line's, not the invoice's: an invoice's total also holds
    /// prorations, other items and credits. Nil tax when the line lists none; nil when it has
    /// no amount, or a tax without one.
    static func lineCharge(_ line: StripeObject) -> (paid: Int64, tax: Int64?)? {
        guard let amount = line.integer("amount") else { return nil }
        let discounts = (line.json["discount_amounts"]?.array ?? []).reduce(Int64(0)) {
            $0 + (StripeObject($1)?.integer("amount") ?? 0)
        }
        guard let taxes = (line.json["taxes"] ?? line.json["tax_amounts"])?.array else {
            return (amount - discounts, nil)
        }
        var tax: Int64 = 0, onTop: Int64 = 0
        for entry in taxes.compactMap(StripeObject.init) {
            guard let value = entry.integer("amount") else { return nil }
            tax += value
            let inclusive = entry.string("tax_behavior").map { $0 == "inclusive" } ?? entry.bool("inclusive") ?? false
            if !inclusive { onTop += value }
        }
        return (amount - discounts + onTop, taxes.isEmpty ? nil : tax)
    }

    /// The invoice's line for the subscription's item (a proration line is not the period).
    static func subscriptionLine(of invoice: StripeObject) -> StripeObject? {
        let lines = invoice.list("lines")
        return lines.first { line in
            line.object("parent")?.string("type") == "subscription_item_details"
                && line.object("parent")?.object("subscription_item_details")?.bool("proration") != true
        } ?? lines.first
    }

    /// The subscription an invoice bills (Basil: `parent.subscription_details.subscription`).
    static func subscriptionID(of invoice: StripeObject) -> String? {
        invoice.object("parent")?.object("subscription_details")?.reference("subscription")
    }

    /// Renews at its end: not set to cancel at the period's end, nor at a date.
    static func autoRenews(_ subscription: StripeObject) -> Bool {
        subscription.bool("cancel_at_period_end") != true && subscription.integer("cancel_at") == nil
            && subscription.string("status") != "canceled"
    }

    /// The player who bought a subscription: its Checkout Session's, else its own
    /// `metadata.player_id`.
    func subscriber(of subscription: StripeObject, caller: StripeAPI.Caller) async throws -> String? {
        if let id = subscription.id {
            let sessions = try await api.get(
                "/v1/checkout/sessions", [("subscription", id), ("limit", "1")], as: caller)
            if let player = sessions.data.first.flatMap(Self.player(of:)) { return player }
        }
        return subscription.metadata["player_id"].flatMap { $0.isEmpty ? nil : $0 }
    }
}

extension String {
    /// The value when it is a two-letter country code, else nil.
    fileprivate var nilIfNotCountry: String? { count == 2 && allSatisfy(\.isLetter) ? self : nil }
}
