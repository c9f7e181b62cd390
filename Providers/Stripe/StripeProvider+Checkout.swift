import Foundation
import ReceiptCore

extension StripeProvider {
    /// A Checkout Session read back, with what it bought: one purchase per line item in payment
    /// mode, the subscription's first period in subscription mode. Nil purchases while the
    /// session is not `paid` (an asynchronous payment still on its way, an abandoned session).
    struct Checkout: Sendable {
        let session: StripeObject
        let purchases: [VerifiedPurchase]
        /// The player the shop named: `client_reference_id`, else `metadata.player_id`.
        var player: String? { StripeProvider.player(of: session) }
        var isPaid: Bool { session.string("payment_status") == "paid" }
    }

    /// `GET /v1/checkout/sessions/{id}` and, once it is paid, what it bought, as its payment stands
    /// now: the payment intent's latest charge comes expanded with the session (with its refunds),
    /// so a refunded or lost payment is read as such. Throws `StoreAPIError`.
    func checkout(_ id: String, caller: StripeAPI.Caller, account: String?) async throws -> Checkout {
        let session = try await api.get(
            "/v1/checkout/sessions/\(Self.pathSafe(id))", [("expand[]", "payment_intent.latest_charge.refunds")],
            as: caller)
        guard session.string("payment_status") == "paid", let environment = session.environment else {
            return Checkout(session: session, purchases: [])
        }
        switch session.string("mode") {
        case "payment":
            let items = try await api.all("/v1/checkout/sessions/\(Self.pathSafe(id))/line_items", as: caller)
            let purchases = items.compactMap {
                Self.linePurchase($0, session: session, environment: environment, account: account)
            }
            let charge = session.object("payment_intent")?.object("latest_charge")
            return Checkout(
                session: session,
                purchases: try await afterSale(
                    Self.withOutsideFacts(purchases, session: session, charge: charge), charge: charge, caller: caller,
                    at: now()))
        case "subscription":
            guard let subscriptionID = session.reference("subscription") else {
                return Checkout(session: session, purchases: [])
            }
            let subscription = try await api.get(
                "/v1/subscriptions/\(Self.pathSafe(subscriptionID))", [("expand[]", "latest_invoice")], as: caller)
            guard let invoice = try await latestInvoice(of: subscription, caller: caller),
                var purchase = Self.periodPurchase(
                    invoice: invoice, subscription: subscription, environment: environment, account: account)
            else { return Checkout(session: session, purchases: []) }
            purchase.buyer = Self.player(of: session)
            let charge = try await charge(paying: invoice, caller: caller)
            return Checkout(
                session: session,
                purchases: try await afterSale(
                    Self.withOutsideFacts([purchase], session: session, charge: charge), charge: charge, caller: caller,
                    at: now()))
        default:
            // Setup mode moves no money.
            return Checkout(session: session, purchases: [])
        }
    }

    /// One line item of a paid session as the purchase of its product: its id (`li_…`) the
    /// transaction, the payment intent the order, its price's unit amount the price.
    static func linePurchase(
        _ item: StripeObject, session: StripeObject, environment: StoreEnvironment, account: String?
    ) -> VerifiedPurchase? {
        guard let id = item.id else { return nil }
        var purchase = VerifiedPurchase(store: .stripe, environment: environment, transactionID: id)
        purchase.originalTransactionID = id
        purchase.appIdentifier = account
        purchase.orderID = session.reference("payment_intent") ?? session.id
        let price = item.object("price")
        purchase.productID = price?.reference("product")
        let quantity = item.integer("quantity")
        purchase.quantity = quantity.map { Int(clamping: $0) }
        purchase.currency = StripeMoney.currency(item.string("currency") ?? price?.string("currency"))
        if let currency = purchase.currency {
            purchase.priceMilliunits = unitPrice(
                decimal: price?.string("unit_amount_decimal"), amount: price?.integer("unit_amount"),
                total: item.integer("amount_subtotal"), quantity: quantity, currency: currency)
            // The line's total after discounts with its tax, and the tax (`amount_total`,
            // `amount_tax`: the tax is within the total whether the price included it or not).
            purchase.paidMilliunits = item.integer("amount_total").flatMap {
                StripeMoney.milliunits($0, currency: currency)
            }
            purchase.taxMilliunits = item.integer("amount_tax").flatMap {
                StripeMoney.milliunits($0, currency: currency)
            }
        }
        purchase.purchaseDate = session.date("created")
        purchase.ownership = .purchased
        purchase.buyer = player(of: session)
        var attributes = ["checkout_session": session.id ?? ""]
        if let customer = session.reference("customer") { attributes["customer"] = customer }
        if let priceID = price?.id { attributes["price"] = priceID }
        purchase.storeAttributes = attributes
        return purchase
    }

    /// A unit price in milliunits: the price's decimal unit amount, else its unit amount, else the
    /// line's amount shared by its quantity.
    static func unitPrice(
        decimal: String?, amount: Int64?, total: Int64?, quantity: Int64?, currency: String
    ) -> Int64? {
        if let decimal, let value = StripeMoney.milliunits(decimal: decimal, currency: currency) { return value }
        if let amount { return StripeMoney.milliunits(amount, currency: currency) }
        guard let total, let quantity, quantity > 0 else { return nil }
        return StripeMoney.milliunits(total / quantity, currency: currency)
    }

    /// What a sale made outside an app store's billing is reported with: the store's token the
    /// session carries (`metadata.external_purchase_token`) and the buyer's tax country
    /// (`TaxCountry`), as the ledger keeps it (the purchase's storefront).
    static func withOutsideFacts(
        _ purchases: [VerifiedPurchase], session: StripeObject, charge: StripeObject?
    ) -> [VerifiedPurchase] {
        let token = session.metadata["external_purchase_token"].flatMap { $0.isEmpty ? nil : $0 }
        let country = taxCountry(session: session, charge: charge)
        return purchases.map { purchase in
            var purchase = purchase
            purchase.externalPurchaseToken = token
            purchase.storefront = purchase.storefront ?? country
            return purchase
        }
    }

    /// Where the buyer is taxed, two letters upper case: the session's customer address (Stripe
    /// Tax fills it), else the charge's billing address, else the card's issuing country.
    static func taxCountry(session: StripeObject, charge: StripeObject?) -> String? {
        [
            session.object("customer_details")?.object("address")?.string("country"),
            charge?.object("billing_details")?.object("address")?.string("country"),
            charge?.object("payment_method_details")?.object("card")?.string("country"),
        ].lazy.compactMap { $0?.uppercased() }.first { $0.count == 2 && $0.allSatisfy(\.isLetter) }
    }

    /// The player a session names: `client_reference_id`, else `metadata.player_id`.
    static func player(of session: StripeObject) -> String? {
        [session.string("client_reference_id"), session.metadata["player_id"]].compactMap { $0 }
            .first { !$0.isEmpty }
    }

    /// An id as a path segment: Stripe's ids are letters, digits and `_`; anything else is
    /// escaped, so a made-up id cannot reach another path.
    static func pathSafe(_ id: String) -> String {
        id.addingPercentEncoding(withAllowedCharacters: idCharacters) ?? ""
    }

    private static let idCharacters = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
}
