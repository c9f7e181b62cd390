public import Foundation

/// Which destination an outbox message goes to.
public enum OutboxTarget: String, Codable, Sendable, CaseIterable {
    /// The client's webhook URL.
    case webhook
    /// The client's refund-callback URL, in the client's refund-callback format.
    case refundCallback = "refund_callback"
    /// The client's delivery URL (server-authoritative delivery).
    case delivery
    /// An e-mail; the body names the recipient.
    case email
    /// A store acknowledgement (`StoreAcknowledgement`), sent through the store provider.
    case storeAcknowledgement = "store_acknowledgement"
    /// The answer to a store's refund request, decided when it is sent, through the store provider.
    case refundAnswer = "refund_answer"
    /// An account's token for a purchase linked after the sale (`AccountTokenAssignment`), sent
    /// through the store provider; at most one per purchase.
    case storeAccountToken = "store_account_token"
    /// A report of a purchase made outside a store's billing (`ExternalPurchaseReport`), sent
    /// through the store provider.
    case externalPurchaseReport = "external_purchase_report"
}

/// A durable message owed to someone, committed together with the change it announces.
public struct OutboxMessage: Sendable {
    public var clientID: String
    public var target: OutboxTarget
    /// `transaction.verified`, `refund.callback`, `email.confirm`...
    public var type: String
    /// Messages with the same key are delivered in order (per transaction, per account).
    public var aggregateKey: String
    /// JSON, sent as is.
    public var body: Data

    public init(clientID: String, target: OutboxTarget, type: String, aggregateKey: String, body: Data) {
        self.clientID = clientID
        self.target = target
        self.type = type
        self.aggregateKey = aggregateKey
        self.body = body
    }
}

/// State changes a dialect wants committed in the same database transaction as a purchase.
public enum RecordEffect: Sendable {
    case outbox(OutboxMessage)
    /// Links the purchase to the account unless it is linked already (the existing link wins).
    case linkPurchase(PurchaseKey, accountID: String)
}

/// The database transaction a purchase is being recorded in, as a dialect may use it: whatever
/// it does commits with the purchase, or not at all. Synchronous: it runs on the database thread.
public protocol RecordScope {
    func enqueue(_ message: OutboxMessage) throws
    /// Links `key` to `accountID` unless already linked; returns the account it is linked to.
    func linkPurchase(_ key: PurchaseKey, to accountID: String) throws -> String
    /// The account `key` is linked to, if any (read inside the transaction).
    func linkedAccount(_ key: PurchaseKey) throws -> AccountRecord?
    func createAccount(_ draft: AccountDraft) throws -> AccountRecord
    /// Sets (or clears) the address an account's one pending confirmation is for, not yet
    /// approved; a link sent for any other address stops working.
    func setPendingEmail(_ email: String?, accountID: String) throws
    /// Has the store of `transaction` told that the purchase belongs to the account whose token is
    /// `accountToken`, so the store's later records of it carry that token. Queued with the record
    /// and sent once per purchase, ever; nothing is queued when the store cannot be told, or
    /// `AccountTokenAssignment.owed` says nothing is owed (the purchase carried a token, or is
    /// family-shared). True when it was queued now.
    @discardableResult
    func tellStore(accountToken: String, for transaction: TransactionRecord) throws -> Bool
}

/// The core as dialects see it: verification in two steps (prove, then record), ledger reads,
/// and the state a dialect may keep, all without SQL or store logic of their own.
public protocol DialectCore: Sendable {
    /// Every served store's declaration, by store id. Dialects map their wire names from these
    /// (`DialectCore+Stores.swift`), never from a list of their own.
    var stores: [StoreDeclaration] { get }
    /// The declaration of a served store, or nil.
    func declaration(of store: StoreID) -> StoreDeclaration?
    /// Proves the evidence with its store and cross-checks it against the client (network only).
    /// Throws `StoreVerificationError`; the refusal is on record and in the log.
    func prove(_ request: VerificationRequest, client: ClientInfo) async throws -> ProvenPurchase
    /// Records the proven purchase once, with `effects`, in one database transaction; the answer
    /// exists only after the commit. The closure sees the outcome and may add more effects.
    func record<T: Sendable>(
        _ proven: ProvenPurchase, client: ClientInfo,
        effects: @escaping @Sendable (VerificationOutcome, any RecordScope) throws -> T
    ) async throws -> (VerificationOutcome, T)
    /// `record` with no effects of the caller's: the core may then share a commit with other
    /// verifications (group commit). Same guarantees, same answer.
    func record(_ proven: ProvenPurchase, client: ClientInfo) async throws -> VerificationOutcome
    func lookUpOrder(
        _ orderID: String, store: StoreID, client: ClientInfo
    ) async throws -> (order: StoreOrder, ledger: [String: LedgerPresence])
    /// A transaction this client may see (its own or its game's), or nil.
    func transaction(store: StoreID, transactionID: String, client: ClientInfo) async throws -> TransactionRecord?
    /// A subscription this client may see, or nil.
    func subscription(
        store: StoreID, originalTransactionID: String, client: ClientInfo
    ) async throws -> SubscriptionState?
    /// Checks a client id and secret presented directly (an OAuth client-credentials grant), in
    /// constant time; nil for an unknown, disabled or wrong one. The answer carries the client's
    /// `version`, for whatever is issued on the strength of this check (`TokenRequest.clientVersion`).
    func authenticateClient(id: String, secret: String) async throws -> ClientInfo?
    /// The enabled client that registered this app, in the store's kind of identifier (app-SDK routes).
    func client(forAppIdentifier identifier: String, store: StoreID) async throws -> ClientInfo?
    /// Applies a rate limit from a handler (limits keyed by purchase). Throws `RouteRefusal`.
    func checkRateLimit(_ policy: RateLimitPolicy, key: String) async throws
    /// Takes back one hit `checkRateLimit` counted: a limit on failures counts every attempt
    /// first (a burst cannot slip past it) and forgives those that succeeded.
    func forgiveRateLimitHit(_ policy: RateLimitPolicy, key: String) async throws

    var tokens: any TokenStore { get }
    var accounts: any AccountStore { get }
    var replayGuard: any ReplayGuard { get }

    /// The service's clock: what a dialect dates (a token's issue and expiry) and checks against
    /// the time reads this, never the machine's clock directly, so tests can move it.
    var now: @Sendable () -> Date { get }

    // MARK: Signed tokens (OpenID Connect dialects)
    /// The service's JWT signer; cores without keys answer `UnavailableTokenSigner`.
    var signer: any TokenSigner { get }
    /// The enabled client with this id (a token's audience), or nil.
    func client(id: String) async throws -> ClientInfo?
}

extension DialectCore {
    public func record(_ proven: ProvenPurchase, client: ClientInfo) async throws -> VerificationOutcome {
        try await record(proven, client: client) { _, _ in }.0
    }

    public var signer: any TokenSigner { UnavailableTokenSigner() }
    public func client(id: String) async throws -> ClientInfo? { nil }
}

extension DialectCore {
    /// Prove, then record with a fixed list of effects.
    public func verify(
        _ request: VerificationRequest, client: ClientInfo, effects: [RecordEffect] = []
    ) async throws -> VerificationOutcome {
        let proven = try await prove(request, client: client)
        if effects.isEmpty { return try await record(proven, client: client) }
        return try await record(proven, client: client) { _, scope in
            for effect in effects {
                switch effect {
                case .outbox(let message): try scope.enqueue(message)
                case .linkPurchase(let key, let accountID): _ = try scope.linkPurchase(key, to: accountID)
                }
            }
        }.0
    }
}
