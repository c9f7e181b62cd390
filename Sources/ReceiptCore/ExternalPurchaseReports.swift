public import Foundation

/// A store's token for a purchase made outside its billing (a link out to the game's web shop, an
/// alternative payment), as the store that issued it describes it once parsed and checked: what
/// the store's reports name it by, whose app it is, and by when it must be reported.
public struct ExternalPurchaseToken: Sendable, Equatable {
    public var store: StoreID
    public var environment: StoreEnvironment
    /// The app the token was issued to, in the store's kind of identifier.
    public var appIdentifier: String
    /// What the store's reports name the token by (an id inside the token, or the token itself).
    public var reportID: String
    /// When the store issued it, where the token says.
    public var issuedAt: Date?
    /// The latest time the store allows for its report (ReceiptGate reports sooner where the
    /// client asks).
    public var storeDeadline: Date
    /// The store issues a token of this kind once per customer: another one of the same player
    /// with no sale tied to it is a duplicate, reported as such (a customer's acquisition token).
    public var oncePerPlayer = false

    public init(
        store: StoreID, environment: StoreEnvironment, appIdentifier: String, reportID: String, issuedAt: Date?,
        storeDeadline: Date
    ) {
        self.store = store
        self.environment = environment
        self.appIdentifier = appIdentifier
        self.reportID = reportID
        self.issuedAt = issuedAt
        self.storeDeadline = storeDeadline
    }
}

/// A token the store's provider will not take: malformed, not a token of this store. Its reason
/// is for the caller (never a secret).
public struct ExternalPurchaseTokenRefused: Error, Sendable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// One report owed to a store about a token, fixed when it is queued (its request id included)
/// so that every retry sends the same report: a store that took it once recognises it again.
public struct ExternalPurchaseReport: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        /// The sale's lines.
        case sale
        /// No sale was tied to the token by its deadline.
        case noSale = "no_sale"
        /// The store asked about a token nobody here registered.
        case unrecognized
        /// A refund (full or partial) of lines reported before.
        case refund
        /// A later paid period of a subscription whose first period was the token's sale.
        case renewal
        /// No sale was tied to the token, and the player held an earlier token of a kind the store
        /// issues once per customer: this one is a duplicate.
        case duplicate
    }

    /// One purchase of the web sale (one ledger row), with its amounts.
    public struct Line: Codable, Sendable, Equatable {
        /// Stable across every report of the token: the ledger's management id, `rg-<id>`. A refund
        /// line refers to its sale's line by it.
        public var lineID: String
        public var productID: String?
        public var quantity: Int
        /// What this line moves, tax included: the sale's amount, or the amount refunded now.
        public var amountMilliunits: Int64
        /// What stays charged after this report, tax included (the sale's amount less every refund so far).
        public var netMilliunits: Int64
        /// The tax within `amountMilliunits` and within `netMilliunits`; nil when the web store did
        /// not say (reported as no tax: the whole amount is then the amount before tax).
        public var taxMilliunits: Int64?
        public var netTaxMilliunits: Int64?
        public var currency: String
        /// ISO 3166-1 alpha-2 of where the buyer is taxed; nil when the web store did not say.
        public var taxCountry: String?
        public var at: Date
        /// For a refund: the sale's line it refunds, and whether nothing stays charged.
        public var refundsLineID: String?
        public var fullRefund: Bool
        /// For a refund: its own id, unique per refund step (`rg-<id>-r<share>`).
        public var refundID: String?
        /// The line is a subscription's period (the ledger's auto-renewable kind), not a one-time purchase.
        public var recurring: Bool = false
        /// For a renewal: the line of the subscription's first period, reported with the token's
        /// sale, and the first line of that sale (what a store that takes a sale as one
        /// transaction knows it by).
        public var initialLineID: String?
        public var saleLineID: String?
        /// For a subscription's period: the days of paid service before it (zero at the first
        /// period; each paid period's days added at its renewal; free periods count none).
        public var paidDaysBefore: Int?
        /// For a renewal: the period is of another product than the one before it (the buyer
        /// changed plans).
        public var changesProduct: Bool?

        public init(
            lineID: String, productID: String?, quantity: Int, amountMilliunits: Int64, netMilliunits: Int64,
            currency: String, taxCountry: String?, at: Date, refundsLineID: String? = nil, fullRefund: Bool = false,
            refundID: String? = nil
        ) {
            self.lineID = lineID
            self.productID = productID
            self.quantity = quantity
            self.amountMilliunits = amountMilliunits
            self.netMilliunits = netMilliunits
            self.currency = currency
            self.taxCountry = taxCountry
            self.at = at
            self.refundsLineID = refundsLineID
            self.fullRefund = fullRefund
            self.refundID = refundID
        }
    }

    public var store: StoreID
    public var environment: StoreEnvironment
    /// The client whose store credentials send it.
    public var clientID: String
    public var appIdentifier: String
    /// The token's row in the ledger (`external_purchase_tokens.id`).
    public var tokenRowID: Int64
    /// What the store names the token by, and the token as the app had it.
    public var reportID: String
    public var token: String
    public var kind: Kind
    /// A UUID (lower case), made when the report is queued and kept across retries.
    public var requestIdentifier: String
    public var lines: [Line]

    public init(
        store: StoreID, environment: StoreEnvironment, clientID: String, appIdentifier: String, tokenRowID: Int64,
        reportID: String, token: String, kind: Kind, requestIdentifier: String, lines: [Line]
    ) {
        self.store = store
        self.environment = environment
        self.clientID = clientID
        self.appIdentifier = appIdentifier
        self.tokenRowID = tokenRowID
        self.reportID = reportID
        self.token = token
        self.kind = kind
        self.requestIdentifier = requestIdentifier
        self.lines = lines
    }

    /// The outbox's key: a token's reports go out in the order they were owed (a sale before its refund).
    public var aggregateKey: String { "external_purchase:\(tokenRowID)" }
}

/// What the store answered a report with, kept with the token.
public struct ExternalPurchaseReportAnswer: Sendable, Equatable {
    /// The body sent.
    public var sent: Data
    /// The store's answer, as it worded it (or what shows that it already held the report).
    public var answer: String

    public init(sent: Data, answer: String) {
        self.sent = sent
        self.answer = answer
    }
}

/// A store provider that takes reports of purchases made outside its billing.
public protocol ExternalPurchaseReporting: Sendable {
    /// Parses `token` as this store's (`packageName` for a store whose tokens do not name their
    /// app). Throws `ExternalPurchaseTokenRefused`.
    func parseToken(_ token: String, packageName: String?, now: Date) throws -> ExternalPurchaseToken
    /// Whether the store wants a report for a token no sale was tied to.
    var reportsTokensWithoutSale: Bool { get }
    /// When a token no sale was tied to is reported as such: the client's own setting where the
    /// store declares one (counted from `registeredAt`), never later than the store's deadline.
    func reportBy(_ token: ExternalPurchaseToken, client: ClientInfo, registeredAt: Date) -> Date
    /// Sends the report with the client's secret settings for this store. A store that already
    /// holds the report (a retry after a lost answer) counts as done. Throws
    /// `StoreVerificationError`: retryable for the store's 5xx, 429 and no answer; any other
    /// refusal is final, its message carrying the store's own words.
    func send(
        _ report: ExternalPurchaseReport, credentials: [String: String]
    ) async throws
        -> ExternalPurchaseReportAnswer
}

extension ExternalPurchaseReporting {
    public func reportBy(_ token: ExternalPurchaseToken, client: ClientInfo, registeredAt: Date) -> Date {
        token.storeDeadline
    }
}
