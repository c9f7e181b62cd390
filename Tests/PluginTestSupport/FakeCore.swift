import AppStore
public import Foundation
import GooglePlay
public import ReceiptCore

/// An in-process stand-in for the service's core, for plugin tests without Postgres or HTTP:
/// evidence is "proven" by a table the test fills, the ledger and every state store live in
/// memory, and the same rules hold (exactly once per store + environment + transaction id,
/// tenancy by game, effects applied only when the record commits).
public final class FakeCore: DialectCore, @unchecked Sendable {
    private let lock = NSLock()
    /// Evidence string → what the store would prove it to be.
    private var evidence: [String: VerifiedPurchase] = [:]
    private var refusals: [String: StoreVerificationError] = [:]
    private var ledger: [String: TransactionRecord] = [:]
    private var nextID: Int64 = 1
    package private(set) var outbox: [OutboxMessage] = []
    /// The webhook events store events owed the game, in order.
    package private(set) var owedWebhooks: [String] = []
    package private(set) var recordedRequests: [VerificationRequest] = []
    public var clients: [ClientInfo] = []
    public var orders: [String: StoreOrder] = [:]
    /// The stores served, as their providers declare them; the App Store unless a test adds more.
    public var stores: [StoreDeclaration] = [AppStoreProvider.declaration]
    /// The served stores whose providers can be told a linked purchase's account token (the
    /// `StoreRegistration.accountTokenSetting` a deployment has); none unless a test says.
    public var storesTakingAccountTokens: Set<StoreID> = []
    /// The clock dialects read; a test may set it to move time.
    public var now: @Sendable () -> Date = { Date() }
    package let clientVersions: MemoryClientVersions
    package let memoryTokens: MemoryTokenStore
    package let memoryAccounts = MemoryAccountStore()
    package let memoryReplay = MemoryReplayGuard()
    private var rateHits: [String: Int] = [:]
    /// Refusals made after the fake store proved a purchase, oldest first, as the core's attempt
    /// rows keep them: (client, store + transaction id, error).
    private var refusedAttempts: [(clientID: String, key: String, error: StoreVerificationError)] = []

    public init() {
        let versions = MemoryClientVersions()
        clientVersions = versions
        memoryTokens = MemoryTokenStore(clientVersions: versions)
    }

    public func add(evidence: String, proves purchase: VerifiedPurchase) {
        lock.withLock { self.evidence[evidence] = purchase }
    }
    public func add(evidence: String, refusedWith error: StoreVerificationError) {
        lock.withLock { refusals[evidence] = error }
    }

    public var tokens: any TokenStore { memoryTokens }
    public var accounts: any AccountStore { memoryAccounts }
    public var replayGuard: any ReplayGuard { memoryReplay }
    package let memorySigner = MemoryTokenSigner()
    public var signer: any TokenSigner { memorySigner }
    public func client(id: String) async throws -> ClientInfo? { lock.withLock { clients.first { $0.clientID == id } } }

    public func declaration(of store: StoreID) -> StoreDeclaration? { stores.first { $0.store == store } }

    public func prove(_ request: VerificationRequest, client: ClientInfo) async throws -> ProvenPurchase {
        // The core's own checks, before and after the fake store: only the proof is faked.
        guard let declaration = declaration(of: request.store) else {
            throw StoreVerificationError(
                code: .invalidField, reason: "UNKNOWN_STORE", message: "the fake core does not serve \(request.store)")
        }
        _ = try VerificationChecks.beforeTheStore(request, client: client, declaration: declaration)
        let (purchase, refusal) = lock.withLock { (evidence[request.evidence], refusals[request.evidence]) }
        if let refusal { throw refusal }
        guard let purchase else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "UNKNOWN_EVIDENCE",
                message: "the fake store does not know this evidence")
        }
        var refusedTransaction: String?
        do {
            return try VerificationChecks.proven([purchase], request: request, client: client, evidenceDigest: "") {
                refusedTransaction = $0
            }
        } catch let error as StoreVerificationError {
            if let refusedTransaction {
                lock.withLock {
                    refusedAttempts.append((client.clientID, "\(purchase.store.rawValue)|\(refusedTransaction)", error))
                }
            }
            throw error
        }
    }

    public func record<T: Sendable>(
        _ proven: ProvenPurchase, client: ClientInfo,
        effects: @escaping @Sendable (VerificationOutcome, any RecordScope) throws -> T
    ) async throws -> (VerificationOutcome, T) {
        try lock.withLock {
            let purchase = proven.purchase
            let key = "\(purchase.store.rawValue)|\(purchase.environment.rawValue)|\(purchase.transactionID)"
            let existing = ledger[key]
            var record: TransactionRecord
            var claim: ClaimOutcome
            // A subscription's period is decided against its owner, as the core's claim does: the
            // first claim naming a player among the periods this client may see.
            let owner =
                LedgerRules.isSubscriptionPeriod(purchase)
                ? ledger.values.filter { other in
                    other.store == purchase.store && other.environment == purchase.environment
                        && other.originalOrSelf == (purchase.originalTransactionID ?? purchase.transactionID)
                        && other.claim?.claimant.playerID != nil && LedgerRules.isVisible(other, to: client)
                }.min {
                    ($0.claim?.claimedAt ?? .distantFuture, $0.managementID) < (
                        $1.claim?.claimedAt ?? .distantFuture, $1.managementID
                    )
                }?.claim : nil
            let takesNothing = owner.map { !LedgerRules.mayTakePeriod(ownedBy: $0, by: proven.claimant) } ?? false
            if let existing {
                guard LedgerRules.isVisible(existing, to: client) else {
                    let error = StoreVerificationError(
                        code: .duplicateTransaction, reason: "REDEEMED_BY_ANOTHER_GAME",
                        message: "another game redeemed it")
                    refusedAttempts.append(
                        (client.clientID, "\(purchase.store.rawValue)|\(purchase.transactionID)", error))
                    throw error
                }
                // As the core does: the evidence may bring an active record news of its end.
                record = existing.updated(byEvidence: purchase, at: now()) ?? existing
                claim = LedgerRules.claim(of: existing.claim, owner: owner, by: proven.claimant)
                if claim.isFirst {
                    // A purchase the store told of first: this claim is its first verification.
                    record.clientID = client.clientID
                    record.gameID = client.gameID
                }
            } else {
                record = TransactionRecord(
                    recording: purchase, managementID: nextID, state: LedgerRules.state(of: purchase, at: now()),
                    clientID: client.clientID, gameID: client.gameID, firstVerifiedAt: Date())
                claim = .first
            }
            if let owner, takesNothing { claim = LedgerRules.claim(of: owner, owner: owner, by: proven.claimant) }
            if claim.isFirst { record.claim = Claim(claimant: proven.claimant, claimedAt: Date()) }
            var firstClaimedBy: Claimant?
            if case .conflict(let first) = claim { firstClaimedBy = first }
            let outcome = VerificationOutcome(
                transaction: record, duplicate: !claim.isFirst, accountMatch: proven.accountMatch, subscription: nil,
                firstClaimedBy: firstClaimedBy)
            // Effects go to a scratch scope and are kept only if the closure succeeds, like a commit.
            let scope = MemoryRecordScope(
                client: client, accounts: memoryAccounts, storesTakingAccountTokens: storesTakingAccountTokens,
                accountTokensQueued: Set(outbox.filter { $0.target == .storeAccountToken }.map(\.aggregateKey)))
            let extra = try effects(outcome, scope)
            ledger[key] = record
            if existing == nil { nextID += 1 }
            outbox += scope.messages
            memoryAccounts.commit(scope)
            recordedRequests.append(proven.request)
            return (outcome, extra)
        }
    }

    public func lookUpOrder(
        _ orderID: String, store: StoreID, client: ClientInfo
    ) async throws -> (order: StoreOrder, ledger: [String: LedgerPresence]) {
        let order = lock.withLock { orders[orderID] } ?? StoreOrder(found: false, environment: nil, entries: [])
        var presence: [String: LedgerPresence] = [:]
        for id in order.entries.compactMap(\.transactionID) {
            let record = lock.withLock { ledger.values.first { $0.transactionID == id } }
            let mine = record.map { LedgerRules.isVisible($0, to: client) } ?? false
            let refusal = lock.withLock {
                refusedAttempts.last { attempt in
                    let attemptGame = clients.first { $0.clientID == attempt.clientID }?.gameID
                    return attempt.key == "\(store.rawValue)|\(id)"
                        && LedgerRules.isVisible(ownerClientID: attempt.clientID, ownerGameID: attemptGame, to: client)
                }?.error
            }
            presence[id] = LedgerPresence(
                found: record != nil, managementID: mine ? record?.managementID : nil,
                state: mine ? record?.state : nil,
                recordedForThisGame: mine, lastRefusal: refusal)
        }
        return (order, presence)
    }

    public func transaction(
        store: StoreID, transactionID: String, client: ClientInfo
    ) async throws -> TransactionRecord? {
        lock.withLock {
            ledger.values.first {
                $0.store == store && $0.transactionID == transactionID && LedgerRules.isVisible($0, to: client)
            }
        }
    }

    public func subscription(
        store: StoreID, originalTransactionID: String, client: ClientInfo
    ) async throws -> SubscriptionState? { nil }

    /// Client secrets the fake accepts, by client id.
    package var clientSecrets: [String: String] = [:]

    /// Runs after a secret was accepted and before anything is issued on its strength: lets a
    /// test change the client in that gap, which real traffic hits only by chance.
    package var afterAuthentication: (@Sendable (String) -> Void)?

    public func authenticateClient(id: String, secret: String) async throws -> ClientInfo? {
        let found = lock.withLock { () -> (ClientInfo, (@Sendable (String) -> Void)?)? in
            guard clientSecrets[id] == secret, var info = clients.first(where: { $0.clientID == id }),
                let version = clientVersions.current(id)
            else { return nil }
            info.version = version
            return (info, afterAuthentication)
        }
        guard let (info, hook) = found else { return nil }
        hook?(id)
        return info
    }

    /// A new secret, as `client rotate-secret` does: the old one stops working, and so does what
    /// was authenticated with it but not yet issued.
    package func rotateSecret(of clientID: String, to secret: String) {
        lock.withLock { clientSecrets[clientID] = secret }
        clientVersions.change(clientID)
    }

    /// As `client disable` does: refused from now on.
    package func disable(_ clientID: String) {
        lock.withLock { clients.removeAll { $0.clientID == clientID } }
        clientVersions.change(clientID, disable: true)
    }

    public func client(forAppIdentifier identifier: String, store: StoreID) async throws -> ClientInfo? {
        guard let kind = declaration(of: store)?.identifiers else { return nil }
        return lock.withLock { clients.first { $0.appIdentifiers(kind).contains(identifier) } }
    }

    public func checkRateLimit(_ policy: RateLimitPolicy, key: String) async throws {
        let hits = lock.withLock { () -> Int in
            rateHits["\(policy.name)|\(key)", default: 0] += 1
            return rateHits["\(policy.name)|\(key)", default: 0]
        }
        if hits > policy.limit {
            throw RouteRefusal(
                code: .rateLimited, message: "rate limited", retryAfter: Int(policy.window.components.seconds))
        }
    }

    public func forgiveRateLimitHit(_ policy: RateLimitPolicy, key: String) async throws {
        lock.withLock { rateHits["\(policy.name)|\(key)"] = max(0, rateHits["\(policy.name)|\(key)", default: 0] - 1) }
    }

    /// A purchase a store told of before any game claimed it (a notification, a poll): known to
    /// the ledger for `owner`, not claimed.
    package func addKnown(_ purchase: VerifiedPurchase, owner: ClientInfo) {
        lock.withLock {
            let key = "\(purchase.store.rawValue)|\(purchase.environment.rawValue)|\(purchase.transactionID)"
            guard ledger[key] == nil else { return }
            ledger[key] = TransactionRecord(
                recording: purchase, managementID: nextID, state: LedgerRules.state(of: purchase, at: now()),
                clientID: owner.clientID, gameID: owner.gameID, firstVerifiedAt: Date())
            nextID += 1
        }
    }

    /// Applies a store event to the recorded transaction its purchase names, as the service does:
    /// `LedgerTransition` decides the move and what the game is owed (kept in `owedWebhooks`).
    @discardableResult
    package func apply(_ event: StoreEvent, at now: Date? = nil) -> LedgerConsequence? {
        let now = now ?? self.now()
        guard let purchase = event.purchase else { return nil }
        let transition = LedgerTransition(
            event.kind, purchase: purchase, autoRenew: event.autoRenew, graceUntil: event.gracePeriodExpires,
            disputeRevokes: event.dispute?.revokes == true, at: now)
        return lock.withLock { () -> LedgerConsequence? in
            let key = "\(purchase.store.rawValue)|\(purchase.environment.rawValue)|\(purchase.transactionID)"
            guard let before = ledger[key] else { return nil }
            var outcome = LedgerOutcome()
            if let news = transition.transaction {
                var after = before
                after.state = LedgerRules.state(of: before.state, after: news)
                if case .reversal = news {
                    (after.revocationDate, after.revocationReason, after.refund) = (nil, nil, nil)
                } else if after.state.isWithdrawn {
                    after.revocationDate = purchase.revocationDate ?? before.revocationDate
                    after.revocationReason = purchase.revocationReason ?? before.revocationReason
                    after.refund = purchase.refund ?? before.refund ?? RefundDetail()
                }
                ledger[key] = after
                outcome.transaction = TransactionChange(before: before, after: after)
            }
            let consequence = transition.consequence(of: outcome)
            if let webhook = consequence.webhook { owedWebhooks.append(webhook) }
            return consequence
        }
    }

    /// Moves a recorded transaction as a store notification of `kind` would (a refund stays a
    /// refund when the period later expires).
    package func tell(_ kind: StoreEvent.Kind, transactionID: String, at now: Date? = nil) {
        let now = now ?? self.now()
        let recorded = lock.withLock { ledger.values.filter { $0.transactionID == transactionID } }
        for record in recorded {
            var purchase = VerifiedPurchase(
                store: record.store, environment: record.environment, transactionID: record.transactionID)
            purchase.originalTransactionID = record.originalTransactionID
            purchase.expiresDate = record.expiresDate
            if kind == .refunded || kind == .revoked {
                purchase.revocationDate = now
                purchase.revocationReason = kind == .refunded ? "refunded" : nil
            }
            apply(StoreEvent(kind: kind, purchase: purchase), at: now)
        }
    }
}
