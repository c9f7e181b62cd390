import Foundation
import ReceiptCore

/// The client row changed (rotated, disabled, updated) since it was cached.
struct ClientChanged: Error {}

extension VerifyPipeline {
    /// Records a purchase the caller adds no effects to. When nothing but its rows and the game
    /// server's messages must commit with it (no subscription state, entitlements or store
    /// acknowledgement), it goes through the group-commit batcher: shared statements and commits.
    /// Everything else takes `record`.
    func recordWithoutEffects(
        _ proven: ProvenPurchase, client: Client, version: Int64
    ) async throws -> VerificationOutcome {
        guard let batcher, fitsTheGroupCommit(proven, client: client) else {
            return try await record(proven, client: client, version: version) { _, _ in }.0
        }
        switch try await batcher.record(proven, client: client, version: version) {
        case .recorded(let outcome):
            logVerified(outcome, proven: proven, client: client)
            return outcome
        case .contended:
            return try await record(proven, client: client, version: version) { _, _ in }.0
        case .foreign:
            let error = StoreVerificationError(
                code: .duplicateTransaction, reason: "REDEEMED_BY_ANOTHER_GAME",
                message: "this purchase was already verified for another game")
            await refused(
                error, request: proven.request, clientID: client.clientID, digest: proven.evidenceDigest,
                transactionID: proven.purchase.transactionID)
            throw error
        case .stale:
            let current: AuthenticatedClient
            do {
                current = try await reloadChanged(client, proven: proven)
            } catch let error as StoreVerificationError {
                await refused(
                    error, request: proven.request, clientID: client.clientID, digest: proven.evidenceDigest,
                    transactionID: proven.purchase.transactionID)
                throw error
            }
            return try await record(proven, client: current.client, version: current.version) { _, _ in }.0
        }
    }

    /// A purchase whose store names its buyer is the buyer's, whoever presents it: presented for
    /// another player (or for none), the buyer's claim is recorded first, as the store's own
    /// notification would record it, so the caller's is answered as what it is (a duplicate, and
    /// a conflict for another player), never as a first claim for the newcomer. The other items of
    /// an order bought with it are recorded as their buyer's claims first, each with what a first
    /// claim queues (a duplicate when they were already).
    func claimForTheBuyer(_ proven: ProvenPurchase, client: Client, version: Int64) async throws {
        for item in proven.boughtWith {
            guard let buyer = item.buyer, Identifier.problem(buyer) == nil else { continue }
            var request = VerificationRequest(
                store: proven.request.store, evidence: proven.request.evidence, requestID: proven.request.requestID)
            request.playerID = buyer
            request.productID = item.productID
            let itsBuyers = ProvenPurchase(
                purchase: item, request: request, accountMatch: .notComparable, evidenceDigest: proven.evidenceDigest)
            _ = try await recordWithoutEffects(itsBuyers, client: client, version: version)
        }
        guard let buyer = proven.purchase.buyer, Identifier.problem(buyer) == nil,
            proven.request.playerID.map({ !LedgerRules.samePlayer($0, buyer) }) ?? true
        else { return }
        var request = VerificationRequest(
            store: proven.request.store, evidence: proven.request.evidence, requestID: proven.request.requestID)
        request.playerID = buyer
        request.productID = proven.request.productID
        let forTheBuyer = ProvenPurchase(
            purchase: proven.purchase, request: request, accountMatch: .notComparable,
            evidenceDigest: proven.evidenceDigest)
        _ = try await recordWithoutEffects(forTheBuyer, client: client, version: version)
    }

    /// Nothing but the transaction, attempt and outbox rows to write, were this the first claim.
    private func fitsTheGroupCommit(_ proven: ProvenPurchase, client: Client) -> Bool {
        // Refunded, revoked or expired evidence may have to bring an active row to the store's word,
        // and evidence holding several purchases claims one of them: the full path does both (rare,
        // and never the hot path).
        // A subscription's period is decided against its owner (`TransactionRepository.subscriptionOwner`).
        let state = LedgerRules.state(of: proven.purchase, at: transactions.now())
        guard state == .active, proven.claimOrder.isEmpty, !LedgerRules.isSubscriptionPeriod(proven.purchase) else {
            return false
        }
        // Messages to the game server are rows the batch writes too (`RecordBatcher.announcements`).
        return FirstClaimEffects.owed(
            by: proven, state: state, client: client, acknowledges: acknowledgement(for: proven, client: client) != nil
        )
        .subtracting([.webhook, .delivery]).isEmpty
    }

    /// The client as it is now, after a version check failed: refused when it was disabled or its
    /// secret rotated since the request was authenticated (the request's signature is then no
    /// longer good); otherwise the request goes on with the new settings.
    func reloadChanged(_ client: Client, proven: ProvenPurchase) async throws -> AuthenticatedClient {
        directory.invalidate(client.clientID)
        guard let current = try await directory.entry(for: client.clientID) else {
            throw StoreVerificationError(code: .unauthorized, reason: "CLIENT_DISABLED", message: "client is disabled")
        }
        guard current.client.secretRotatedAt == client.secretRotatedAt else {
            throw StoreVerificationError(
                code: .unauthorized, reason: "SECRET_ROTATED",
                message: "the client's secret was rotated; sign with the new one")
        }
        // Proven against the settings the request was authenticated with: what the change may
        // have taken away (an environment) is checked again.
        try VerificationChecks.acceptsEnvironment(of: proven.purchase, client: current.client.info)
        return current
    }

    func withAcknowledgement<T: Sendable>(
        _ proven: ProvenPurchase, client: Client,
        effects: @escaping @Sendable (VerificationOutcome, any RecordScope) throws -> T
    )
        -> @Sendable (VerificationOutcome, any RecordScope) throws -> T
    {
        // A store that wants new purchases acknowledged gets it through the outbox, committed
        // with the record: durable, retried, never lost.
        let acknowledgement = acknowledgement(for: proven, client: client)
        // A dialect asks for the store to be told an account's token; a store that cannot be told is sent nothing.
        let storeTakesAccountTokens = stores[proven.purchase.store]?.accountTokenSetting != nil
        return { outcome, scope in
            if let acknowledgement, !outcome.duplicate {
                try scope.enqueue(
                    OutboxMessage(
                        clientID: client.clientID, target: .storeAcknowledgement, type: "store.acknowledge",
                        aggregateKey: "\(outcome.transaction.store.rawValue):\(outcome.transaction.originalOrSelf)",
                        body: try JSONEncoder().encode(acknowledgement)))
            }
            return try effects(outcome, storeTakesAccountTokens ? scope : UntellableStoreScope(base: scope))
        }
    }

    /// What the purchase's store wants sent after its first claim, if anything (`FirstClaimEffects.storeAcknowledgement`).
    private func acknowledgement(for proven: ProvenPurchase, client: Client) -> StoreAcknowledgement? {
        stores[proven.purchase.store]?.acknowledgement?.acknowledgement(for: proven.purchase, client: client.info)
    }

    func logVerified(_ outcome: VerificationOutcome, proven: ProvenPurchase, client: Client) {
        tally?.recordVerified(store: proven.purchase.store.rawValue, duplicate: outcome.duplicate)
        // Pairs, not a dictionary: a line for every verification (the same line either way; keys are sorted when written).
        logger.log(
            .info, "verified",
            pairs: [
                ("request.id", proven.request.requestID), ("client.id", client.clientID),
                ("store", proven.purchase.store.rawValue), ("transaction.id", String(outcome.transaction.managementID)),
                ("duplicate", String(outcome.duplicate)), ("state", outcome.transaction.state.rawValue),
                ("account_match", outcome.accountMatch.rawValue),
            ])
    }
}
