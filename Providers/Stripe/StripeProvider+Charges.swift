import Foundation
import ReceiptCore

extension StripeProvider {
    /// The purchases a charge paid for, through its payment intent: the line items of the
    /// Checkout Session that made it (`GET /v1/checkout/sessions?payment_intent=`), else the
    /// subscription period of the invoice it paid (`GET /v1/invoice_payments`, Basil's link from a
    /// payment to its invoice). Empty when it paid for nothing this provider records.
    func purchases(
        paidBy charge: StripeObject, caller: StripeAPI.Caller, account: String?
    ) async throws
        -> [VerifiedPurchase]
    {
        guard let environment = charge.environment, let intent = charge.reference("payment_intent") else { return [] }
        let sessions = try await api.get(
            "/v1/checkout/sessions", [("payment_intent", intent), ("limit", "1")], as: caller)
        if let session = sessions.data.first(where: { $0.string("mode") == "payment" }), let id = session.id {
            let items = try await api.all("/v1/checkout/sessions/\(Self.pathSafe(id))/line_items", as: caller)
            return items.compactMap {
                Self.linePurchase($0, session: session, environment: environment, account: account)
            }
        }
        let payments = try await api.get(
            "/v1/invoice_payments",
            [("payment[type]", "payment_intent"), ("payment[payment_intent]", intent), ("limit", "1")], as: caller)
        guard let invoiceID = payments.data.first?.reference("invoice") else { return [] }
        let invoice = try await api.get("/v1/invoices/\(Self.pathSafe(invoiceID))", as: caller)
        guard let subscriptionID = Self.subscriptionID(of: invoice) else { return [] }
        let subscription = try await api.get("/v1/subscriptions/\(Self.pathSafe(subscriptionID))", as: caller)
        return Self.periodPurchase(
            invoice: invoice, subscription: subscription, environment: environment, account: account
        ).map { [$0] } ?? []
    }

    /// A charge's refunds as each purchase's: full when Stripe says the charge is `refunded`
    /// (or all of its amount is), else partial with the share refunded. A partial refund of a
    /// charge that paid for several line items is each line's, by the same share: Stripe refunds
    /// amounts of a payment, not items. Nil when nothing is refunded (a refund that failed).
    static func refunded(
        _ purchases: [VerifiedPurchase], charge: StripeObject, at fallback: Date
    ) -> [VerifiedPurchase]? {
        let refundedAmount = charge.integer("amount_refunded") ?? 0
        guard refundedAmount > 0 else { return nil }
        let amount = charge.integer("amount") ?? 0
        let full = charge.bool("refunded") == true || refundedAmount >= amount
        let refunds = charge.list("refunds").filter {
            $0.string("status") != "failed" && $0.string("status") != "canceled"
        }
        let latest = refunds.max { ($0.integer("created") ?? 0) < ($1.integer("created") ?? 0) }
        // Thousandths of a percent, rounded down: 1 of 3 refunded is 33_333.
        let share =
            full || amount <= 0 ? 100_000 : Int((Double(refundedAmount) * 100_000 / Double(amount)).rounded(.down))
        return purchases.map { purchase in
            var refunded = purchase
            // A partial refund keeps the purchase: only a full one takes it back.
            if full {
                refunded.revocationDate = latest?.date("created") ?? fallback
                refunded.revocationReason = latest?.string("reason") ?? "refunded"
            }
            refunded.refund = RefundDetail(
                storeType: full ? "full" : "partial", storeSaysPartial: !full, percentageMilliunits: share)
            return refunded
        }
    }

    /// The charge that paid an invoice, with its refunds: its paid invoice payment's payment
    /// intent (`GET /v1/invoice_payments?invoice=`, Basil's link) and that intent's latest charge.
    /// Nil when nothing paid it through a payment intent (an invoice paid out of band, or free).
    func charge(paying invoice: StripeObject, caller: StripeAPI.Caller) async throws -> StripeObject? {
        guard let invoiceID = invoice.id else { return nil }
        let payments = try await api.get("/v1/invoice_payments", [("invoice", invoiceID), ("limit", "10")], as: caller)
        guard
            let intentID = payments.data.first(where: { $0.string("status") == "paid" })?.object("payment")?
                .reference("payment_intent")
        else { return nil }
        let intent = try await api.get(
            "/v1/payment_intents/\(Self.pathSafe(intentID))", [("expand[]", "latest_charge.refunds")], as: caller)
        return intent.object("latest_charge")
    }

    /// What became of the payment `purchases` were made with, as its charge shows now: refunded
    /// (fully or in part, as `refunded(_:charge:at:)` reads it) or lost in a dispute (revoked as a
    /// chargeback). A session's `payment_status: paid` says only that the money once arrived, so a
    /// session read after its refund is not delivered as paid. Without a charge, as they are.
    func afterSale(
        _ purchases: [VerifiedPurchase], charge: StripeObject?, caller: StripeAPI.Caller, at fallback: Date
    ) async throws -> [VerifiedPurchase] {
        guard let charge else { return purchases }
        if charge.bool("disputed") == true, let chargeID = charge.id {
            let disputes = try await api.get("/v1/disputes", [("charge", chargeID), ("limit", "100")], as: caller)
            if disputes.data.contains(where: { $0.string("status") == "lost" }) {
                return purchases.map { purchase in
                    var revoked = purchase
                    revoked.revocationDate = fallback
                    revoked.revocationReason = "chargeback"
                    return revoked
                }
            }
        }
        return Self.refunded(purchases, charge: charge, at: fallback) ?? purchases
    }

    /// The news a sale's event is, once its payment was read back: the sale itself, or what
    /// became of it since (a refund, a partial refund, a lost dispute).
    static func saleKind(of purchase: VerifiedPurchase) -> StoreEvent.Kind {
        if purchase.revocationDate != nil { return purchase.revocationReason == "chargeback" ? .revoked : .refunded }
        if purchase.refund != nil { return .partiallyRefunded }
        return purchase.kind == .autoRenewableSubscription ? .subscribed : .oneTimeCharge
    }

    /// A dispute as the ledger's news of one purchase: opened (`.disputed`, revoking at once when
    /// the client's policy says so), lost (revoked as a chargeback), won (reinstated when the
    /// policy had revoked it, else nothing changes), or still open.
    static func disputeEvent(
        _ dispute: StripeObject, purchase: VerifiedPurchase, opened: Bool, revokesOnDispute: Bool, at fallback: Date
    ) -> StoreEvent {
        let currency = StripeMoney.currency(dispute.string("currency"))
        let news = DisputeNews(
            id: dispute.id ?? "", reason: dispute.string("reason"),
            amountMilliunits: currency.flatMap { c in
                dispute.integer("amount").flatMap { StripeMoney.milliunits($0, currency: c) }
            },
            currency: currency, revokes: revokesOnDispute)
        if opened {
            var disputed = purchase
            if revokesOnDispute {
                // Revoked at once by the client's policy: the refund callback carries when.
                disputed.revocationDate = dispute.date("created") ?? fallback
                disputed.revocationReason = "dispute"
            }
            return StoreEvent(kind: .disputed, purchase: disputed, dispute: news)
        }
        switch dispute.string("status") {
        case "lost":
            var revoked = purchase
            revoked.revocationDate = fallback
            revoked.revocationReason = "chargeback"
            return StoreEvent(kind: .revoked, purchase: revoked, dispute: news)
        case "won":
            return StoreEvent(kind: revokesOnDispute ? .refundReversed : .other, purchase: purchase, dispute: news)
        default:
            return StoreEvent(kind: .other, purchase: purchase, dispute: news)
        }
    }
}
