import Foundation
import JSON
import ReceiptCore

/// One Xsolla transaction as a webhook or a report record tells it, in the terms the ledger
/// needs: who paid, for what, how much, in which mode. Every field is optional; a webhook and a
/// report record of the same transaction give the same purchases (`purchases(store:)`), so a
/// payment found again by reconciliation lands on the same ledger rows.
struct XsollaSale: Sendable {
    struct Item: Sendable, Equatable {
        var sku: String
        var quantity: Int?
        /// What the line cost in all (its quantity included), in milliunits of `currency`.
        var amountMilliunits: Int64?
        var currency: String?
        var type: String?
    }

    struct Subscription: Sendable {
        var id: String?
        var planID: String?
        var productID: String?
        var created: Date?
        var nextCharge: Date?
        var ends: Date?
    }

    var transactionID: String?
    var orderID: String?
    var sandbox = false
    /// The buyer as the game knows them.
    var player: String?
    var projectID: String?
    var items: [Item] = []
    var subscription: Subscription?
    /// A purchase with no item list: a virtual currency package, by its name or SKU.
    var packageName: String?
    var totalMilliunits: Int64?
    var currency: String?
    /// The tax within what the user paid (`payment_details.vat`, EU, and `.sales_tax`, the US and
    /// Canada, added up), in milliunits of `taxCurrency`.
    var taxMilliunits: Int64?
    var taxCurrency: String?
    var paidAt: Date?
    /// A report record's status (`done`, `refunded`, `canceled`, ...).
    var status: String?
    /// An app store's token for a sale made outside its billing, from the custom parameter
    /// `external_purchase_token` the game put in the payment token.
    var externalPurchaseToken: String?
    /// The buyer's country (`user.country`, two letters): where the sale is taxed.
    var country: String?

    /// What every kind of record may carry beside the payment: the custom parameter and the
    /// buyer's country, as Xsolla names them in webhooks and report records alike.
    mutating func readOutsideFacts(_ body: [String: JSONValue]) {
        if let token = XsollaValues.text(body["custom_parameters"]?["external_purchase_token"]), !token.isEmpty {
            externalPurchaseToken = token
        }
        if let code = XsollaValues.text(body["user"]?["country"])?.uppercased(), code.count == 2,
            code.allSatisfy(\.isLetter)
        {
            country = code
        }
    }

    /// The tax in `payment_details`, when it says any in one currency.
    mutating func readTax(_ details: JSONValue?) {
        let parts = [details?["vat"], details?["sales_tax"]].compactMap { part -> (Int64, String)? in
            guard let amount = XsollaValues.milliunits(part?["amount"]),
                let currency = XsollaValues.currency(part?["currency"])
            else { return nil }
            return (amount, currency)
        }
        guard let first = parts.first, parts.allSatisfy({ $0.1 == first.1 }) else { return }
        taxMilliunits = parts.reduce(Int64(0)) { $0 + $1.0 }
        taxCurrency = first.1
    }

    /// The tax within `amount`, a part of the whole sale (`totalMilliunits`) in `lineCurrency`:
    /// its share of the sale's tax; nil when the tax was not said in that currency.
    func tax(of amount: Int64, in lineCurrency: String) -> Int64? {
        guard let taxMilliunits, taxCurrency == lineCurrency, currency == lineCurrency, let totalMilliunits,
            totalMilliunits > 0
        else { return nil }
        let (share, overflow) = taxMilliunits.multipliedReportingOverflow(by: amount)
        return overflow ? nil : max(0, min(amount, share / totalMilliunits))
    }

    /// The purchases the transaction holds: one per listed item (`<id>/<sku>`, a single item too),
    /// else one under the transaction id (a virtual currency package, a subscription's period).
    /// A webhook and a report record of one sale name the same ids only under this one rule.
    func purchases(store: StoreID) -> [VerifiedPurchase] {
        guard let transactionID else { return [] }
        let environment: StoreEnvironment = sandbox ? .sandbox : .production
        func base(_ id: String) -> VerifiedPurchase {
            var purchase = VerifiedPurchase(store: store, environment: environment, transactionID: id)
            purchase.appIdentifier = projectID
            purchase.orderID = orderID ?? transactionID
            purchase.purchaseDate = paidAt
            purchase.externalPurchaseToken = externalPurchaseToken
            purchase.storefront = country
            purchase.storeAttributes["xsolla.transaction_id"] = transactionID
            if let player {
                purchase.storeAttributes["xsolla.player"] = player
                // The core makes the purchase this player's; an id it could not hold stays unclaimed.
                if Identifier.problem(player) == nil { purchase.buyer = player }
            }
            return purchase
        }
        if items.count > 1 || (items.count == 1 && subscription == nil) {
            let several = items.count > 1
            return items.map { item in
                var purchase = base(XsollaTransactionID.make(transactionID, sku: item.sku))
                purchase.productID = item.sku
                purchase.quantity = item.quantity ?? 1
                // Xsolla does not say whether a virtual good is used up (the game decides): only
                // virtual currency is known to be; anything else may grant what the catalog maps.
                purchase.kind = item.type == "virtual_currency" ? .consumable : nil
                let line = item.amountMilliunits ?? (several ? nil : totalMilliunits)
                let lineCurrency = item.amountMilliunits != nil ? item.currency : currency
                if let line, let lineCurrency {
                    purchase.priceMilliunits = line / Int64(max(1, item.quantity ?? 1))
                    purchase.currency = lineCurrency
                    purchase.paidMilliunits = line
                    purchase.taxMilliunits = tax(of: line, in: lineCurrency)
                }
                if let type = item.type { purchase.storeAttributes["xsolla.item_type"] = type }
                return purchase
            }
        }
        var purchase = base(transactionID)
        if let subscription {
            purchase.productID = subscription.planID ?? subscription.productID
            purchase.kind = .autoRenewableSubscription
            purchase.originalTransactionID = subscription.id.map(XsollaSale.subscriptionKey)
            purchase.expiresDate = subscription.nextCharge ?? subscription.ends
            purchase.readBackKey = subscription.id
        } else {
            purchase.productID = packageName
            purchase.kind = packageName == nil ? nil : .consumable  // a virtual currency package
        }
        purchase.quantity = 1
        if let totalMilliunits, let currency {
            purchase.priceMilliunits = totalMilliunits
            purchase.currency = currency
            purchase.paidMilliunits = totalMilliunits
            purchase.taxMilliunits = tax(of: totalMilliunits, in: currency)
        }
        return [purchase]
    }

    /// A subscription's ledger key: Xsolla's subscription id, apart from transaction ids.
    static func subscriptionKey(_ id: String) -> String { "subscription-\(id)" }
}

extension XsollaSale {
    /// A payment, refund or partial refund webhook, or the `billing` part of a Web Shop one.
    init(payment body: [String: JSONValue]) {
        let transaction = body["transaction"]
        transactionID = XsollaValues.text(transaction?["id"])
        sandbox = XsollaValues.flag(transaction?["dry_run"])
        player = Self.player(body["user"])
        projectID = XsollaValues.text(body["settings"]?["project_id"])
        paidAt = XsollaValues.date(transaction?["payment_date"]) ?? XsollaValues.date(transaction?["date"])
        orderID = XsollaValues.text(body["order"]?["id"])
        let purchase = body["purchase"]
        for entry in purchase?["virtual_items"]?["items"]?.array ?? [] {
            guard let sku = Self.productID(entry) else { continue }
            // In a payment webhook an item's `amount` is how many were bought.
            items.append(
                Item(sku: sku, quantity: XsollaValues.integer(entry["amount"]).map { Int(clamping: $0) }))
        }
        if let sub = purchase?["subscription"]?.object {
            subscription = Self.subscription(sub)
        }
        packageName = purchase?["virtual_currency"].flatMap(Self.productID)
        let paid = [purchase?["total"], purchase?["checkout"], body["payment_details"]?["payment"]].first {
            XsollaValues.milliunits($0?["amount"]) != nil && XsollaValues.currency($0?["currency"]) != nil
        }
        totalMilliunits = XsollaValues.milliunits(paid??["amount"])
        currency = XsollaValues.currency(paid??["currency"])
        readTax(body["payment_details"])
        readOutsideFacts(body)
    }

    /// A Web Shop `order_paid` or `order_canceled`: its items, its order, and the payment or refund
    /// it carries under `billing` (sent since 2025; older projects get it as a webhook of its own).
    init(order body: [String: JSONValue]) {
        self.init(payment: body["billing"]?.object ?? [:])
        let order = body["order"]
        orderID = XsollaValues.text(order?["id"]) ?? orderID
        transactionID = transactionID ?? XsollaValues.text(order?["invoice_id"])
        if XsollaValues.text(order?["mode"]) == "sandbox" { sandbox = true }
        player = Self.player(body["user"]) ?? player
        readOutsideFacts(body)
        let real = XsollaValues.text(order?["currency_type"]) != "virtual"
        let orderCurrency = real ? XsollaValues.currency(order?["currency"]) : nil
        let ordered: [Item] = (body["items"]?.array ?? []).compactMap { entry in
            guard let sku = Self.productID(entry) else { return nil }
            return Item(
                sku: sku, quantity: XsollaValues.integer(entry["quantity"]).map { Int(clamping: $0) },
                amountMilliunits: orderCurrency == nil ? nil : XsollaValues.milliunits(entry["amount"]),
                currency: orderCurrency, type: XsollaValues.text(entry["type"]))
        }
        if !ordered.isEmpty { items = ordered }
        subscription = nil
        packageName = nil
        if orderCurrency != nil, let amount = XsollaValues.milliunits(order?["amount"]) {
            totalMilliunits = amount
            currency = orderCurrency
        }
    }

    /// A record of the transactions report (`/reports/transactions/search.json`).
    init(report record: [String: JSONValue]) {
        let transaction = record["transaction"]
        transactionID = XsollaValues.text(transaction?["id"])
        sandbox = XsollaValues.flag(transaction?["dry_run"])
        status = XsollaValues.text(transaction?["status"])
        projectID = XsollaValues.text(transaction?["project"]?["id"])
        paidAt = XsollaValues.date(transaction?["transfer_date"]) ?? XsollaValues.date(transaction?["create_date"])
        player = Self.player(record["user"])
        let purchase = record["purchase"]
        // Listed as the payment webhook lists them, or as a bare list.
        let listed = purchase?["virtual_items"]?["items"]?.array ?? purchase?["virtual_items"]?.array ?? []
        for entry in listed {
            guard let sku = Self.productID(entry) else { continue }
            let quantity = XsollaValues.integer(entry["quantity"]) ?? XsollaValues.integer(entry["amount"])
            items.append(Item(sku: sku, quantity: quantity.map { Int(clamping: $0) }))
        }
        if let sub = purchase?["subscription"]?.object, sub.values.contains(where: { !$0.isNull }) {
            subscription = Self.subscription(sub)
            if subscription?.planID == nil { subscription?.planID = XsollaValues.text(sub["name"]) }
        }
        packageName = purchase?["virtual_currency"].flatMap(Self.productID)
        let paid = [purchase?["simple_checkout"], record["payment_details"]?["payment"]].first {
            XsollaValues.milliunits($0?["amount"]) != nil && XsollaValues.currency($0?["currency"]) != nil
        }
        totalMilliunits = XsollaValues.milliunits(paid??["amount"])
        currency = XsollaValues.currency(paid??["currency"])
        readTax(record["payment_details"])
        readOutsideFacts(record)
    }

    /// The player: `external_id` where Xsolla sends it (Web Shop, Xsolla Login), else `id`.
    static func player(_ user: JSONValue?) -> String? {
        XsollaValues.text(user?["external_id"]) ?? XsollaValues.text(user?["id"])
    }

    /// An item's or a package's product id, one rule for webhooks and report records: its SKU,
    /// else its name.
    static func productID(_ entry: JSONValue) -> String? {
        XsollaValues.text(entry["sku"]) ?? XsollaValues.text(entry["name"])
    }

    /// Whether the sale names what was bought: items, a package, or a subscription. A Web Shop
    /// order's payment half names none (its items come with `order_paid`), and so may its report
    /// record: such a sale is not recorded apart, or it would stand beside the order's items.
    var namesAProduct: Bool { !items.isEmpty || subscription != nil || packageName != nil }

    static func subscription(_ fields: [String: JSONValue]) -> Subscription {
        Subscription(
            id: XsollaValues.text(fields["subscription_id"]), planID: XsollaValues.text(fields["plan_id"]),
            productID: XsollaValues.text(fields["product_id"]), created: XsollaValues.date(fields["date_create"]),
            nextCharge: XsollaValues.date(fields["date_next_charge"]), ends: XsollaValues.date(fields["date_end"]))
    }
}
