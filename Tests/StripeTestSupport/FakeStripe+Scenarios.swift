package import Foundation

/// What happens in a shop, as Stripe records it: sessions paid, subscriptions renewed, charges
/// refunded and disputed, each with the event Stripe would send.
extension FakeStripe {
    /// One line of a Checkout Session: a product, its unit amount in the currency's minor unit,
    /// the quantity, and the tax Stripe Tax added on top of the line (`tax_behavior` exclusive).
    package struct Line: Sendable {
        package let product: String
        package let unitAmount: Int
        package let quantity: Int
        package let tax: Int

        package init(_ product: String, unitAmount: Int, quantity: Int = 1, tax: Int = 0) {
            self.product = product
            self.unitAmount = unitAmount
            self.quantity = quantity
            self.tax = tax
        }
    }

    /// What a paid session made: its id, the payment intent, the charge and the line items.
    package struct Sale: Sendable {
        package let session: String
        package let paymentIntent: String
        package let charge: String
        package let lineItems: [String]
    }

    /// The e-mail address every sale's buyer gives at checkout (`customer_details.email`).
    package static let buyerEmail = "jenny.rosen@example.com"

    /// A completed Checkout Session in payment mode, with its payment intent and charge.
    @discardableResult
    package func sale(
        player: String?, lines: [Line], currency: String = "usd", livemode: Bool = false,
        paymentStatus: String = "paid", metadataPlayer: String? = nil, metadata: [String: String] = [:]
    ) -> Sale {
        let session = newID("cs"), intent = newID("pi"), charge = newID("ch")
        let created = unixNow
        var itemIDs: [String] = []
        var total = 0
        for line in lines {
            let id = newID("li")
            itemIDs.append(id)
            total += line.unitAmount * line.quantity + line.tax
            let price: [String: Any] = [
                "id": newID("price"), "object": "price", "active": true, "currency": currency, "livemode": livemode,
                "product": line.product, "type": "one_time", "unit_amount": line.unitAmount,
                "unit_amount_decimal": String(line.unitAmount), "tax_behavior": "exclusive",
            ]
            put([
                "id": id, "object": "item", "amount_discount": 0, "amount_subtotal": line.unitAmount * line.quantity,
                "amount_tax": line.tax, "amount_total": line.unitAmount * line.quantity + line.tax,
                "currency": currency, "description": line.product, "price": price, "quantity": line.quantity,
            ])
        }
        state.lineItems.update { $0[session] = itemIDs }
        var object: [String: Any] = [
            "id": session, "object": "checkout.session", "amount_subtotal": total - lines.reduce(0) { $0 + $1.tax },
            "amount_total": total,
            "total_details": ["amount_discount": 0, "amount_tax": lines.reduce(0) { $0 + $1.tax }],
            "client_reference_id": player ?? NSNull(), "created": created, "currency": currency,
            "customer": newID("cus"), "livemode": livemode, "metadata": [String: String](), "mode": "payment",
            "payment_intent": intent, "payment_status": paymentStatus,
            "status": paymentStatus == "paid" ? "complete" : "open", "subscription": NSNull(),
            "customer_email": NSNull(),
            "customer_details": [
                "email": Self.buyerEmail, "name": "Jenny Rosen", "phone": NSNull(), "tax_exempt": "none",
                "address": [
                    "city": "Dublin", "country": "IE", "line1": "1 Main Street", "line2": NSNull(),
                    "postal_code": "D01 AB12", "state": NSNull(),
                ],
            ],
        ]
        var allMetadata = metadata
        if let metadataPlayer { allMetadata["player_id"] = metadataPlayer }
        object["metadata"] = allMetadata
        put(object)
        put(chargeObject(charge, intent: intent, amount: total, currency: currency, livemode: livemode))
        put([
            "id": intent, "object": "payment_intent", "amount": total, "amount_received": total, "currency": currency,
            "created": created, "latest_charge": charge, "livemode": livemode, "status": "succeeded",
        ])
        return Sale(session: session, paymentIntent: intent, charge: charge, lineItems: itemIDs)
    }

    func chargeObject(_ id: String, intent: String, amount: Int, currency: String, livemode: Bool) -> [String: Any] {
        [
            "id": id, "object": "charge", "amount": amount, "amount_captured": amount, "amount_refunded": 0,
            "captured": true, "created": unixNow, "currency": currency, "disputed": false, "livemode": livemode,
            "paid": true, "payment_intent": intent, "refunded": false, "status": "succeeded",
            "refunds": [
                "object": "list", "data": [[String: Any]](), "has_more": false, "url": "/v1/charges/\(id)/refunds",
            ],
        ]
    }

    /// Refunds `amount` of a charge (all of it when nil).
    package func refund(charge: String, amount: Int? = nil, reason: String = "requested_by_customer") {
        update(charge) { charge in
            let total = charge["amount"] as? Int ?? 0
            let already = charge["amount_refunded"] as? Int ?? 0
            let refunded = min(total, already + (amount ?? (total - already)))
            charge["amount_refunded"] = refunded
            charge["refunded"] = refunded >= total
            var refunds = charge["refunds"] as? [String: Any] ?? [:]
            var data = refunds["data"] as? [[String: Any]] ?? []
            data.insert(
                [
                    "id": newID("re"), "object": "refund", "amount": refunded - already, "charge": charge["id"] ?? "",
                    "created": unixNow, "currency": charge["currency"] ?? "usd", "reason": reason,
                    "status": "succeeded",
                ], at: 0)
            refunds["data"] = data
            charge["refunds"] = refunds
        }
    }

    /// A dispute of a charge, in `status`.
    @discardableResult
    package func dispute(
        charge: String, status: String = "needs_response", reason: String = "fraudulent", id: String? = nil
    ) -> String {
        let id = id ?? newID("du")
        let charged = object(charge) ?? [:]
        put([
            "id": id, "object": "dispute", "amount": charged["amount"] ?? 0, "charge": charge, "created": unixNow,
            "currency": charged["currency"] ?? "usd", "livemode": charged["livemode"] ?? false,
            "payment_intent": charged["payment_intent"] ?? NSNull(), "reason": reason, "status": status,
            "metadata": [String: String](),
        ])
        update(charge) { $0["disputed"] = true }
        return id
    }

    /// What a subscription's Checkout Session made.
    package struct Subscribed: Sendable {
        package let session: String
        package let subscription: String
        package let firstInvoice: String
        package let charge: String
    }

    /// A Checkout Session in subscription mode, paid: the subscription, its first invoice (paid)
    /// and the charge that paid it, linked as Basil links them (the invoice's `parent`, an
    /// invoice payment naming the payment intent).
    @discardableResult
    package func subscribe(
        player: String?, product: String, unitAmount: Int, currency: String = "usd", period: TimeInterval = 30 * 86_400,
        livemode: Bool = false, metadata: [String: String] = [:], taxPercent: Int? = nil
    ) -> Subscribed {
        let session = newID("cs"), subscription = newID("sub"), item = newID("si")
        let start = unixNow, end = unixNow + Int(period)
        put([
            "id": subscription, "object": "subscription", "cancel_at": NSNull(), "cancel_at_period_end": false,
            "created": start, "currency": currency, "customer": newID("cus"), "ended_at": NSNull(),
            "livemode": livemode, "metadata": [String: String](), "status": "active",
            "default_tax_rates": taxPercent.map { percent -> [[String: Any]] in
                [["id": newID("txr"), "object": "tax_rate", "inclusive": false, "percentage": percent]]
            } ?? [],
            "items": [
                "object": "list", "has_more": false, "url": "/v1/subscription_items?subscription=\(subscription)",
                "data": [
                    [
                        "id": item, "object": "subscription_item", "current_period_start": start,
                        "current_period_end": end, "quantity": 1, "subscription": subscription,
                        "price": [
                            "id": newID("price"), "object": "price", "currency": currency, "product": product,
                            "type": "recurring", "unit_amount": unitAmount, "unit_amount_decimal": String(unitAmount),
                            "recurring": ["interval": "month", "interval_count": 1],
                        ],
                    ]
                ],
            ],
        ])
        let (invoice, charge) = invoice(
            subscription: subscription, item: item, product: product, unitAmount: unitAmount, currency: currency,
            reason: "subscription_create", start: start, end: end, paid: true, livemode: livemode,
            taxPercent: taxPercent)
        update(subscription) { $0["latest_invoice"] = invoice }
        put([
            "id": session, "object": "checkout.session", "amount_total": unitAmount + tax(unitAmount, taxPercent),
            "client_reference_id": player ?? NSNull(), "created": start, "currency": currency, "livemode": livemode,
            "metadata": metadata, "mode": "subscription", "payment_intent": NSNull(),
            "payment_status": "paid",
            "status": "complete", "subscription": subscription, "invoice": invoice,
        ])
        return Subscribed(session: session, subscription: subscription, firstInvoice: invoice, charge: charge ?? "")
    }

    /// The subscription's next period: a new invoice, paid or not, and the subscription's period
    /// and status moved as Stripe moves them (past_due while an invoice is unpaid); of `product`
    /// at `unitAmount` when the buyer changed plans. Returns the invoice id.
    @discardableResult
    package func nextPeriod(
        of subscription: String, paid: Bool, period: TimeInterval = 30 * 86_400, nextAttempt: Int? = nil,
        product: String? = nil, unitAmount: Int? = nil
    ) -> String {
        let current = object(subscription) ?? [:]
        let items = ((current["items"] as? [String: Any])?["data"] as? [[String: Any]]) ?? []
        var item = items.first ?? [:]
        var price = item["price"] as? [String: Any] ?? [:]
        if let product {
            price["id"] = newID("price")
            price["product"] = product
        }
        if let unitAmount {
            price["unit_amount"] = unitAmount
            price["unit_amount_decimal"] = String(unitAmount)
        }
        item["price"] = price
        let start = item["current_period_end"] as? Int ?? unixNow
        let end = start + Int(period)
        let (invoice, _) = invoice(
            subscription: subscription, item: item["id"] as? String ?? "", product: price["product"] as? String ?? "",
            unitAmount: price["unit_amount"] as? Int ?? 0, currency: price["currency"] as? String ?? "usd",
            reason: "subscription_cycle", start: start, end: end, paid: paid,
            livemode: current["livemode"] as? Bool ?? false, nextAttempt: nextAttempt,
            taxPercent: ((current["default_tax_rates"] as? [[String: Any]])?.first?["percentage"] as? Int))
        update(subscription) { subscription in
            subscription["latest_invoice"] = invoice
            subscription["status"] = paid ? "active" : "past_due"
            var moved = item
            moved["current_period_start"] = start
            moved["current_period_end"] = end
            subscription["items"] = ["object": "list", "has_more": false, "data": [moved]]
        }
        return invoice
    }

    /// An invoice paid after it failed: the subscription active again.
    package func pay(invoice: String, subscription: String) {
        update(invoice) {
            $0["status"] = "paid"
            $0["amount_paid"] = $0["amount_due"] ?? 0
            $0["status_transitions"] = ["paid_at": unixNow]
            $0["next_payment_attempt"] = NSNull()
        }
        update(subscription) { $0["status"] = "active" }
    }

    /// The subscription ended (`canceled`, or `unpaid` when its retries ran out).
    package func end(subscription: String, status: String = "canceled", at ended: Int? = nil) {
        update(subscription) {
            $0["status"] = status
            if status == "canceled" { $0["ended_at"] = ended ?? unixNow }
        }
    }

    /// The tax a rate of `percent` adds to `amount` (minor units, rounded half up as Stripe does).
    func tax(_ amount: Int, _ percent: Int?) -> Int { ((amount * (percent ?? 0)) + 50) / 100 }

    /// When an invoice's subscription period starts.
    package func periodStart(of invoice: String) -> Int? {
        let lines = (object(invoice)?["lines"] as? [String: Any])?["data"] as? [[String: Any]]
        return (lines?.first?["period"] as? [String: Any])?["start"] as? Int
    }

    private func invoice(
        subscription: String, item: String, product: String, unitAmount: Int, currency: String, reason: String,
        start: Int, end: Int, paid: Bool, livemode: Bool, nextAttempt: Int? = nil, taxPercent: Int? = nil
    ) -> (invoice: String, charge: String?) {
        let id = newID("in"), intent = newID("pi")
        let tax = tax(unitAmount, taxPercent), total = unitAmount + tax
        let nothing: Any = NSNull()
        let attempt: Any = (paid ? nil : nextAttempt) ?? nothing
        let paidAt: Any = paid ? unixNow : nothing
        let itemDetails: [String: Any] = [
            "subscription": subscription, "subscription_item": item, "proration": false,
        ]
        let pricing: [String: Any] = [
            "type": "price_details", "unit_amount_decimal": String(unitAmount),
            "price_details": ["price": newID("price"), "product": product],
        ]
        let line: [String: Any] = [
            "id": newID("il"), "object": "line_item", "amount": unitAmount, "currency": currency, "invoice": id,
            "discount_amounts": [[String: Any]](),
            "taxes": taxPercent == nil
                ? [[String: Any]]()
                : [
                    [
                        "amount": tax, "tax_behavior": "exclusive", "taxability_reason": "standard_rated",
                        "type": "tax_rate_details",
                    ]
                ],
            "livemode": livemode, "quantity": 1, "subscription": subscription,
            "period": ["start": start, "end": end],
            "parent": ["type": "subscription_item_details", "subscription_item_details": itemDetails],
            "pricing": pricing,
        ]
        let parent: [String: Any] = [
            "type": "subscription_details", "quote_details": nothing,
            "subscription_details": ["subscription": subscription, "metadata": [String: String]()],
        ]
        var invoice: [String: Any] = [
            "id": id, "object": "invoice", "amount_due": total, "amount_paid": paid ? total : 0,
            "billing_reason": reason, "created": unixNow, "currency": currency, "livemode": livemode,
            "subtotal": unitAmount, "total": total, "total_excluding_tax": unitAmount,
        ]
        // Basil's list of the invoice's taxes (it replaced the invoice's `tax`).
        invoice["total_taxes"] =
            taxPercent == nil
            ? [[String: Any]]()
            : [
                [
                    "amount": tax, "tax_behavior": "exclusive", "taxability_reason": "standard_rated",
                    "type": "tax_rate_details",
                ]
            ]
        invoice["customer_address"] = [
            "city": "Dublin", "country": "IE", "line1": "1 Main Street", "line2": nothing, "postal_code": "D01 AB12",
            "state": nothing,
        ]
        invoice["status"] = paid ? "paid" : "open"
        invoice["next_payment_attempt"] = attempt
        invoice["period_start"] = start
        invoice["period_end"] = start
        invoice["status_transitions"] = ["paid_at": paidAt]
        invoice["parent"] = parent
        invoice["lines"] = ["object": "list", "has_more": false, "url": "/v1/invoices/\(id)/lines", "data": [line]]
        put(invoice)
        guard paid else { return (id, nil) }
        let charge = newID("ch")
        put(chargeObject(charge, intent: intent, amount: total, currency: currency, livemode: livemode))
        put([
            "id": intent, "object": "payment_intent", "amount": total, "amount_received": total,
            "currency": currency, "created": unixNow, "latest_charge": charge, "livemode": livemode,
            "status": "succeeded",
        ])
        put([
            "id": newID("inpay"), "object": "invoice_payment", "amount_paid": total,
            "amount_requested": total,
            "created": unixNow, "currency": currency, "invoice": id, "is_default": true, "livemode": livemode,
            "payment": ["type": "payment_intent", "payment_intent": intent], "status": "paid",
        ])
        return (id, charge)
    }
}

extension FakeStripe {
    /// The charge that paid an invoice: its invoice payment's payment intent's latest charge.
    package func charge(paying invoice: String) -> String? {
        let payment = Self.all(state, kind: "invoice_payment").first { $0["invoice"] as? String == invoice }
        let intent = (payment?["payment"] as? [String: Any])?["payment_intent"] as? String
        return intent.flatMap { object($0)?["latest_charge"] as? String }
    }
}
