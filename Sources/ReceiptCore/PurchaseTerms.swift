public import Foundation

// What a purchase was bought under, beyond its product and price: the offer that discounted it,
// the items of a purchase that sold several (priced and refunded one by one), and the billing
// plan of a subscription paid in instalments over a commitment. Each is Codable in the shape the
// native API shows (snake case, dates as epoch milliseconds), the same shape the ledger keeps.
// A store's enumerated values are kept as the store wrote them, known or not.

/// The offer a purchase was bought under.
public struct PurchaseOffer: Codable, Sendable, Equatable {
    /// `introductory`, `promotional`, `offer_code` or `win_back`; an offer kind the service does
    /// not know is the store's own value, as it came.
    public var type: String?
    /// The offer's id in the store (an offer code's reference name, a promotional offer's id).
    public var identifier: String?
    /// The store's word for how the discount is paid (`FREE_TRIAL`, `PAY_AS_YOU_GO`,
    /// `PAY_UP_FRONT`, `ONE_TIME`), verbatim.
    public var discountType: String?
    /// How long the discount lasts, an ISO 8601 duration (`P1M`).
    public var period: String?

    public init(type: String? = nil, identifier: String? = nil, discountType: String? = nil, period: String? = nil) {
        self.type = type
        self.identifier = identifier
        self.discountType = discountType
        self.period = period
    }

    enum CodingKeys: String, CodingKey {
        case type, identifier, discountType = "discount_type", period
    }

    /// Every key, null when unknown (the API's rule for its records).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(type, forKey: .type)
        try container.encode(identifier, forKey: .identifier)
        try container.encode(discountType, forKey: .discountType)
        try container.encode(period, forKey: .period)
    }
}

/// One item of a purchase that sold several under one transaction, each with its own SKU, price
/// and refunds. The catalog maps an item's SKU as a product id.
public struct PurchaseItem: Codable, Sendable, Equatable {
    public var sku: String
    public var displayName: String?
    /// The item's price in milliunits of the purchase's currency.
    public var priceMilliunits: Int64?
    /// Set once the store took the item back: it grants nothing from then on.
    public var revocationDate: Date?
    public var refunds: [ItemRefund]

    public init(
        sku: String, displayName: String? = nil, priceMilliunits: Int64? = nil, revocationDate: Date? = nil,
        refunds: [ItemRefund] = []
    ) {
        self.sku = sku
        self.displayName = displayName
        self.priceMilliunits = priceMilliunits
        self.revocationDate = revocationDate
        self.refunds = refunds
    }

    /// Taken back by the store, or refunded.
    public var isRefunded: Bool { revocationDate != nil || !refunds.isEmpty }

    enum CodingKeys: String, CodingKey {
        case sku, displayName = "display_name", priceMilliunits = "price_milliunits"
        case revocationDateMs = "revocation_date_ms", refunds
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sku = try container.decode(String.self, forKey: .sku)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
        priceMilliunits = try container.decodeIfPresent(Int64.self, forKey: .priceMilliunits)
        revocationDate = try container.decodeIfPresent(Int64.self, forKey: .revocationDateMs).map(Date.init(epochMs:))
        refunds = try container.decodeIfPresent([ItemRefund].self, forKey: .refunds) ?? []
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(sku, forKey: .sku)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(priceMilliunits, forKey: .priceMilliunits)
        try container.encode(revocationDate?.epochMilliseconds, forKey: .revocationDateMs)
        try container.encode(refunds, forKey: .refunds)
    }
}

/// One refund of an item, in the store's words.
public struct ItemRefund: Codable, Sendable, Equatable {
    public var amountMilliunits: Int64?
    public var date: Date?
    /// The store's reason and kind of refund (`UNINTENDED_PURCHASE`; `FULL`, `PRORATED`), verbatim.
    public var reason: String?
    public var type: String?

    public init(amountMilliunits: Int64? = nil, date: Date? = nil, reason: String? = nil, type: String? = nil) {
        self.amountMilliunits = amountMilliunits
        self.date = date
        self.reason = reason
        self.type = type
    }

    enum CodingKeys: String, CodingKey {
        case amountMilliunits = "amount_milliunits", dateMs = "date_ms", reason, type
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        amountMilliunits = try container.decodeIfPresent(Int64.self, forKey: .amountMilliunits)
        date = try container.decodeIfPresent(Int64.self, forKey: .dateMs).map(Date.init(epochMs:))
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
        type = try container.decodeIfPresent(String.self, forKey: .type)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(amountMilliunits, forKey: .amountMilliunits)
        try container.encode(date?.epochMilliseconds, forKey: .dateMs)
        try container.encode(reason, forKey: .reason)
        try container.encode(type, forKey: .type)
    }
}

/// A subscription paid in instalments over a commitment (monthly payments over a 12-month
/// commitment): the customer owes every payment of the commitment, so the subscription
/// renews until the commitment ends whatever its auto-renew says meanwhile.
public struct BillingCommitment: Codable, Sendable, Equatable {
    /// The store's word for the billing plan (`MONTHLY`, `BILLED_UPFRONT`), verbatim.
    public var billingPlanType: String?
    /// Which payment of the commitment this period is (1-based), and how many there are.
    public var billingPeriodNumber: Int?
    public var totalBillingPeriods: Int?
    /// When the commitment ends: until then the subscription renews.
    public var expiresDate: Date?
    /// The whole commitment's price in milliunits of the purchase's currency.
    public var priceMilliunits: Int64?

    public init(
        billingPlanType: String? = nil, billingPeriodNumber: Int? = nil, totalBillingPeriods: Int? = nil,
        expiresDate: Date? = nil, priceMilliunits: Int64? = nil
    ) {
        self.billingPlanType = billingPlanType
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.expiresDate = expiresDate
        self.priceMilliunits = priceMilliunits
    }

    /// Whether a period ending at `periodEnd` still has payments of the commitment after it.
    public func renews(after periodEnd: Date?) -> Bool {
        guard let expiresDate, let periodEnd else { return false }
        return expiresDate > periodEnd
    }

    enum CodingKeys: String, CodingKey {
        case billingPlanType = "billing_plan_type", billingPeriodNumber = "billing_period_number"
        case totalBillingPeriods = "total_billing_periods", expiresDateMs = "expires_date_ms"
        case priceMilliunits = "price_milliunits"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        billingPlanType = try container.decodeIfPresent(String.self, forKey: .billingPlanType)
        billingPeriodNumber = try container.decodeIfPresent(Int.self, forKey: .billingPeriodNumber)
        totalBillingPeriods = try container.decodeIfPresent(Int.self, forKey: .totalBillingPeriods)
        expiresDate = try container.decodeIfPresent(Int64.self, forKey: .expiresDateMs).map(Date.init(epochMs:))
        priceMilliunits = try container.decodeIfPresent(Int64.self, forKey: .priceMilliunits)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(billingPlanType, forKey: .billingPlanType)
        try container.encode(billingPeriodNumber, forKey: .billingPeriodNumber)
        try container.encode(totalBillingPeriods, forKey: .totalBillingPeriods)
        try container.encode(expiresDate?.epochMilliseconds, forKey: .expiresDateMs)
        try container.encode(priceMilliunits, forKey: .priceMilliunits)
    }
}

extension Date {
    fileprivate init(epochMs: Int64) { self.init(timeIntervalSince1970: Double(epochMs) / 1000) }
}
