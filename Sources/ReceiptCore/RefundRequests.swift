public import Foundation

/// A store asking the developer before it decides a refund (a consumption request, a pending
/// refund review): what the core records, tells the game, and answers before `deadline`.
public struct RefundRequestNews: Sendable, Equatable {
    /// The store's id for this request: one answer per id.
    public var requestID: String
    /// What the store needs back with the answer (a pending refund token), kept until then.
    public var answerToken: String?
    public var requestedAt: Date
    /// The store's deadline for the answer.
    public var deadline: Date
    /// The customer's or store's reason, as the store names it.
    public var reason: String?

    public init(requestID: String, answerToken: String? = nil, requestedAt: Date, deadline: Date, reason: String? = nil)
    {
        self.requestID = requestID
        self.answerToken = answerToken
        self.requestedAt = requestedAt
        self.deadline = deadline
        self.reason = reason
    }
}

/// What the game told of a purchase (`POST /v1/transactions/{store}/{id}/consumption`).
public struct ConsumptionReport: Sendable, Equatable, Codable {
    public var delivered: Bool
    /// 0–100 000: thousandths of a percent consumed.
    public var consumedMilliunits: Int?
    public var usageEvents: [UsageEvent]

    /// One use of the item, as the game recorded it.
    public struct UsageEvent: Sendable, Equatable, Codable {
        public var at: Date?
        public var description: String?

        public init(at: Date?, description: String?) {
            self.at = at
            self.description = description
        }
    }

    public init(delivered: Bool, consumedMilliunits: Int?, usageEvents: [UsageEvent] = []) {
        self.delivered = delivered
        self.consumedMilliunits = consumedMilliunits
        self.usageEvents = usageEvents
    }
}

/// What a client chose to answer refund requests with (`receiptgate client … --consumption-consent`
/// and the refund options). The defaults answer without consumption data.
public struct RefundPolicy: Sendable, Equatable, Codable {
    /// The operator attests that the game collects the customer's consent to share consumption
    /// data with the store. Off: the answer says the customer did not consent and carries none.
    public var consumptionConsent = false
    /// A delivered purchase consumed at least this much (percent) is answered "decline".
    public var declineAtPercent = 50
    /// The preference when neither rule decides (delivered, consumed less, or nothing known).
    public var otherwise: RefundPreference = .prorated
    /// Whether the game offered a free sample or trial before the purchase.
    public var sampleContentProvided = false

    public init() {}
}

/// The developer's preferred outcome, in neutral terms (each store maps it to its own words).
public enum RefundPreference: String, Sendable, Codable, CaseIterable {
    case grant, decline, prorated, neutral
}

/// The answer the core decided, which a store provider puts in its wire format.
public struct RefundAnswer: Sendable, Equatable, Codable {
    public var customerConsented: Bool
    /// nil: nothing is known of the delivery.
    public var delivered: Bool?
    /// Only with consent.
    public var consumedMilliunits: Int?
    /// Only with consent.
    public var usageEvents: [ConsumptionReport.UsageEvent]
    public var preference: RefundPreference
    public var sampleContentProvided: Bool
    /// No ledger row for the transaction: answered from the policy alone.
    public var policyOnly: Bool

    public init(
        customerConsented: Bool, delivered: Bool?, consumedMilliunits: Int?,
        usageEvents: [ConsumptionReport.UsageEvent],
        preference: RefundPreference, sampleContentProvided: Bool, policyOnly: Bool
    ) {
        self.customerConsented = customerConsented
        self.delivered = delivered
        self.consumedMilliunits = consumedMilliunits
        self.usageEvents = usageEvents
        self.preference = preference
        self.sampleContentProvided = sampleContentProvided
        self.policyOnly = policyOnly
    }
}

/// The one rule that turns what the ledger knows into an answer; the service and the tests'
/// fakes both call it.
public enum RefundAnswerRule {
    /// What the ledger knows of the purchase a refund is asked for.
    public struct Known: Sendable {
        /// The ledger holds the transaction.
        public var held: Bool
        /// A game claimed it (was told to deliver).
        public var claimed: Bool
        /// The game's delivery URL acknowledged its delivery message.
        public var deliveryAcknowledged: Bool
        public var report: ConsumptionReport?

        public init(held: Bool, claimed: Bool, deliveryAcknowledged: Bool, report: ConsumptionReport?) {
            self.held = held
            self.claimed = claimed
            self.deliveryAcknowledged = deliveryAcknowledged
            self.report = report
        }
    }

    /// The game's report wins; without one, an acknowledged delivery counts as delivered and a
    /// purchase no game ever claimed as not delivered (nobody was told to deliver it). Not
    /// delivered: grant. Delivered and consumed at least the policy's share: decline. Otherwise the
    /// policy's preference. Without consent, no consumption data goes out.
    public static func answer(_ known: Known, policy: RefundPolicy) -> RefundAnswer {
        let delivered: Bool? =
            known.report?.delivered
            ?? (known.deliveryAcknowledged ? true : (known.held && !known.claimed ? false : nil))
        let consumed = known.report?.consumedMilliunits
        let preference: RefundPreference
        if delivered == false {
            preference = .grant
        } else if delivered == true, let consumed, consumed >= policy.declineAtPercent * 1000 {
            preference = .decline
        } else {
            preference = policy.otherwise
        }
        let consent = policy.consumptionConsent
        return RefundAnswer(
            customerConsented: consent, delivered: delivered, consumedMilliunits: consent ? consumed : nil,
            usageEvents: consent ? known.report?.usageEvents ?? [] : [], preference: preference,
            sampleContentProvided: policy.sampleContentProvided, policyOnly: !known.held)
    }
}

/// A recorded refund request, as a provider needs it to answer.
public struct RefundRequestTarget: Sendable {
    public let store: StoreID
    public let environment: StoreEnvironment
    /// The store's transaction (or order) id the request is about.
    public let transactionID: String
    public let appIdentifier: String?
    public let answerToken: String?

    public init(
        store: StoreID, environment: StoreEnvironment, transactionID: String, appIdentifier: String?,
        answerToken: String?
    ) {
        self.store = store
        self.environment = environment
        self.transactionID = transactionID
        self.appIdentifier = appIdentifier
        self.answerToken = answerToken
    }
}

/// The store takes no answer like this one (one that requires the customer's consent, say): the
/// request is left unanswered, and the store decides without the game's word.
public struct RefundAnswerNotTaken: Error, Sendable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// A store provider that answers refund requests (with the store's own consumption or review API).
public protocol RefundRequestAnswering: Sendable {
    /// Sends `answer` with the client's secret settings for this store; returns the body sent (kept
    /// with the request). Throws `StoreVerificationError`, retryable for the store's 5xx and 429.
    func answer(
        _ request: RefundRequestTarget, with answer: RefundAnswer, credentials: [String: String]
    ) async throws -> Data
}
