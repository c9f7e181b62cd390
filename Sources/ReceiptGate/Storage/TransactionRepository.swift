import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore

/// Transactions and verification attempts. Exactly once is decided by the unique key (store,
/// environment, transaction id) and `ON CONFLICT`, never by reading first; whatever must commit
/// with a purchase (webhooks, deliveries, a dialect's effects) commits in the same transaction.
public struct TransactionRepository: Sendable {
    let pool: PostgresPool
    /// Seals the e-mails a dialect queues with a record (their one-time links).
    let secrets: SecretBox
    /// Where the read API's queries go (the primary, or a fresh enough standby); writes always use `pool`.
    var reads: LedgerReads
    /// The service's clock: what state the evidence shows (an expiry in the past is expired).
    var now: @Sendable () -> Date = { Date() }

    init(pool: PostgresPool, secrets: SecretBox) {
        self.pool = pool
        self.secrets = secrets
        reads = LedgerReads(primary: pool)
    }

    /// The environments a client accepts: its reads show nothing from the others.
    static func environments(of client: ClientInfo) -> [String] { client.environments.map(\.rawValue).sorted() }

    /// Records the proven purchase once and claims it: the first claim (a new row, or one a store
    /// told us of) gets its webhook, delivery and the caller's first-verification effects; a later
    /// one is a duplicate, and a conflict when made for another player. With the attempt row.
    /// Throws DUPLICATE_TRANSACTION when another game already redeemed it.
    /// With `expectedVersion` (a client authenticated from memory), throws `ClientChanged` when the
    /// client row is no longer that version, before anything is written.
    func record<T: Sendable>(
        _ proven: ProvenPurchase, client: Client, expectedVersion: Int64? = nil,
        effects: @escaping @Sendable (VerificationOutcome, any RecordScope) throws -> T
    ) async throws -> (VerificationOutcome, T) {
        let now = now()
        return try await pool.withTransaction { connection in
            if let expectedVersion {
                guard try ClientRepository.isCurrent(client.info, version: expectedVersion, on: connection) else {
                    throw ClientChanged()
                }
            } else {
                // Read fresh by the caller: only the catalog scope to hold (`ClientRepository.isCurrent`).
                try CatalogScopeLock.share(client.info.scope, on: connection)
            }
            let claimed = try Self.claim(proven, client: client, at: now, on: connection)
            let taken = claimed.proven
            var transaction = claimed.transaction
            let owed = FirstClaimEffects.owed(by: taken, state: transaction.state, client: client, acknowledges: false)
            // A period new to the ledger moves its subscription whoever presented it (a period of
            // another player's subscription is its owner's news too).
            if owed.contains(.subscriptionState), let original = taken.purchase.originalTransactionID,
                try claimed.inserted
                    || claimed.claim.isFirst
                        && SubscriptionRepository.find(
                            store: transaction.store, environment: transaction.environment,
                            original: original, on: connection) == nil
            {
                try SubscriptionRepository.upsert(
                    taken.purchase, original: original, client: client, at: now, on: connection)
            } else if owed.contains(.subscriptionState), let original = taken.purchase.originalTransactionID,
                let key = taken.purchase.readBackKey
            {
                // A subscription recorded before its read-back key was kept learns it here.
                try SubscriptionRepository.rememberReadBackKey(
                    key, purchase: taken.purchase, original: original, on: connection)
            }
            // A purchase refunded, revoked or expired since it was recorded (a notification
            // missed) is answered, and kept, as what it is now.
            if !claimed.inserted {
                transaction = try Self.brought(transaction, to: taken.purchase, at: now, on: connection)
            }
            if owed.contains(.entitlements),
                claimed.claim.isFirst || claimed.inserted || transaction.state != claimed.transaction.state
            {
                try EntitlementIndex.refreshOwners(
                    store: transaction.store, environment: transaction.environment,
                    original: transaction.originalOrSelf,
                    transactionID: transaction.transactionID, client: client, on: connection)
            }
            var firstClaimedBy: Claimant?
            switch claimed.claim {
            case .first: try Self.announce(transaction, proven: taken, client: client, on: connection)
            case .repeated: break
            case .conflict(let first):
                firstClaimedBy = first
                try Self.announceConflict(
                    transaction, first: first, now: taken.claimant, client: client, on: connection)
            }
            let duplicate = !claimed.claim.isFirst
            let request = taken.request
            try connection.execute(
                """
                INSERT INTO verification_attempts (client_id, store, request_id, outcome, transaction_row_id, duplicate, player_id, evidence_sha256)
                VALUES (\(client.clientID), \(transaction.store.rawValue), \(request.requestID), \("verified"), \(transaction.managementID), \(duplicate),
                        \(request.playerID), \(taken.evidenceDigest))
                """)
            let subscription =
                transaction.kind == .autoRenewableSubscription
                ? try SubscriptionRepository.find(
                    store: transaction.store, environment: transaction.environment,
                    original: transaction.originalOrSelf, on: connection)
                : nil
            let outcome = VerificationOutcome(
                transaction: transaction, duplicate: duplicate, accountMatch: taken.accountMatch,
                subscription: subscription,
                firstClaimedBy: firstClaimedBy)
            let extra = try effects(
                outcome, PostgresRecordScope(connection: connection, client: client.info, secrets: secrets))
            return (outcome, extra)
        }
    }

    /// The events a first claim owes the game server (`FirstClaimEffects`): `transaction.verified`
    /// to the webhook, and the delivery (server-authoritative) once per transaction.
    private static func announce(
        _ transaction: TransactionRecord, proven: ProvenPurchase, client: Client, on connection: PostgresConnection
    ) throws {
        try OutboxRepository.insert(try firstClaimMessages(transaction, proven: proven, client: client), on: connection)
    }

    /// What `announce` writes, rendered: the group commit writes the same messages for its batch.
    static func firstClaimMessages(
        _ transaction: TransactionRecord, proven: ProvenPurchase, client: Client
    ) throws -> [OutboxRepository.Queued] {
        let aggregate = "\(transaction.store.rawValue):\(transaction.originalOrSelf)"
        let view = NativeTransaction(transaction, accountMatch: proven.accountMatch)
        let owed = FirstClaimEffects.owed(by: proven, state: transaction.state, client: client, acknowledges: false)
        var messages: [OutboxRepository.Queued] = []
        if owed.contains(.webhook) {
            messages.append(
                OutboxRepository.envelope(
                    event: "transaction.verified", transaction: view, client: client.clientID, aggregateKey: aggregate)
            )
        }
        if owed.contains(.delivery) {
            let request = proven.request
            messages.append(
                try OutboxRepository.envelope(
                    event: "entitlement.delivery",
                    payload: Delivery(
                        transaction: view, playerID: request.playerID, characterID: request.characterID,
                        serverID: request.serverID, gameID: client.gameID),
                    client: client.clientID, aggregateKey: aggregate, target: .delivery))
        }
        return messages
    }

    /// Writes the state and dates `LedgerRules` moved the row to, unless the row left the state
    /// `recorded` meanwhile (a notification applied concurrently wins); nil when it did.
    /// `transaction` as `evidence` shows it now, written when that says more than the row (a
    /// refund, a revocation, an expiry). A row another writer changed since it was read (a
    /// notification, a repeat of the same claim with the same news) is read again and the evidence
    /// applied to what that writer left, so the answer is never older than the row.
    private static func brought(
        _ transaction: TransactionRecord, to evidence: VerifiedPurchase, at now: Date, on connection: PostgresConnection
    ) throws -> TransactionRecord {
        var current = transaction
        for _ in 0..<3 {
            guard let updated = current.updated(byEvidence: evidence, at: now) else { return current }
            if let written = try write(updated, replacing: current.state, on: connection) { return written }
            guard
                let row = try connection.query(
                    "SELECT \(unescaped: TransactionRows.columns) FROM transactions WHERE id = \(current.managementID)"
                ).first
            else { return current }
            current = try TransactionRows.transaction(row)
        }
        return current
    }

    private static func write(
        _ updated: TransactionRecord, replacing recorded: TransactionState,
        on connection: PostgresConnection
    ) throws -> TransactionRecord? {
        try connection.query(
            """
            UPDATE transactions SET state = \(updated.state.rawValue), revocation_date = \(updated.revocationDate),
                revocation_reason = \(updated.revocationReason), expires_date = \(updated.expiresDate),
                refund_store_type = \(updated.refund?.storeType), refund_partial = \(updated.refund?.storeSaysPartial),
                refund_percentage_milliunits = \(updated.refund?.percentageMilliunits), refunded_quantity = \(updated.refund?.quantity),
                updated_at = now()
            WHERE id = \(updated.managementID) AND state = \(recorded.rawValue)
            RETURNING \(unescaped: TransactionRows.columns)
            """
        ).first.map(TransactionRows.transaction)
    }

    /// Records a failed attempt, so support sees what reached us. Never throws: a failure to log
    /// must not change the answer. `transactionID`: the transaction refused, when the store had
    /// proved one before the refusal.
    func recordFailure(
        clientID: String?, store: String?, requestID: String, playerID: String?, evidenceDigest: String?,
        code: String, reason: String?, message: String, transactionID: String? = nil
    ) async {
        _ = try? await pool.execute(
            """
            INSERT INTO verification_attempts (client_id, store, request_id, outcome, error_code, error_reason, error_message, player_id,
                                               evidence_sha256, transaction_id)
            VALUES (\(clientID), \(store), \(requestID), \("failed"), \(code), \(reason), \(String(message.prefix(1000))), \(playerID),
                    \(evidenceDigest), \(transactionID))
            """)
    }

    /// The transaction by its store id, as this client may see it; production first.
    func find(store: StoreID, transactionID: String, client: ClientInfo) async throws -> TransactionRecord? {
        try await reads.query(
            """
            SELECT \(unescaped: TransactionRows.columns) FROM transactions
            WHERE store = \(store.rawValue) AND transaction_id = \(transactionID) AND \(LedgerSQL.visible(to: client))
              AND environment = ANY (\(Self.environments(of: client))::text[])
            ORDER BY environment = 'production' DESC LIMIT 1
            """
        ).first.map(TransactionRows.transaction)
    }

    /// A page of a player's transactions, oldest first, after management id `after`.
    func playerPage(
        playerID: String, client: ClientInfo, after: Int64, limit: Int
    ) async throws -> (page: [TransactionRecord], more: Bool) {
        let rows = try await reads.query(
            """
            SELECT \(unescaped: TransactionRows.columns) FROM transactions
            WHERE player_id = \(playerID) AND id > \(after) AND \(LedgerSQL.visible(to: client))
              AND environment = ANY (\(Self.environments(of: client))::text[])
            ORDER BY id LIMIT \(limit + 1)
            """)
        return (try rows.prefix(limit).map(TransactionRows.transaction), rows.count > limit)
    }

    /// The subscription and its latest transaction, as this client may see them; production first.
    func subscription(
        store: StoreID, original: String, client: ClientInfo
    ) async throws -> (SubscriptionState, TransactionRecord?)? {
        // A subscription row carries its client; the game comes from that client.
        let rows = try await reads.query(
            """
            SELECT \(unescaped: TransactionRows.subscriptionColumns) FROM (
                SELECT s.*, c.game_id FROM subscriptions s JOIN clients c ON c.id = s.client_id
                WHERE s.store = \(store.rawValue) AND s.original_transaction_id = \(original)) owned
            WHERE \(LedgerSQL.visible(to: client, owner: "owned")) AND environment = ANY (\(Self.environments(of: client))::text[])
            ORDER BY environment = 'production' DESC LIMIT 1
            """)
        guard let row = rows.first else { return nil }
        let state = try TransactionRows.subscription(row)
        guard let latestID = state.latestTransactionID else { return (state, nil) }
        let latest = try await reads.query(
            """
            SELECT \(unescaped: TransactionRows.columns) FROM transactions
            WHERE store = \(store.rawValue) AND environment = \(state.environment.rawValue) AND transaction_id = \(latestID)
              AND \(LedgerSQL.visible(to: client))
            """
        ).first.map(TransactionRows.transaction)
        return (state, latest)
    }

    /// What the ledger knows of each transaction id of one store, for the client asking. Another
    /// game's record is acknowledged, never shown; so are its refused attempts.
    func presence(store: StoreID, transactionIDs: [String], client: ClientInfo) async throws -> [String: LedgerPresence]
    {
        var ledger: [String: LedgerPresence] = [:]
        for id in Set(transactionIDs) {
            let row = try await reads.query(
                """
                SELECT id, state, client_id, game_id FROM transactions
                WHERE store = \(store.rawValue) AND transaction_id = \(id)
                ORDER BY environment = 'production' DESC LIMIT 1
                """
            ).first
            let refusal = try await lastRefusal(store: store, transactionID: id, client: client)
            guard let row else {
                ledger[id] = LedgerPresence(
                    found: false, managementID: nil, state: nil, recordedForThisGame: false, lastRefusal: refusal)
                continue
            }
            let mine = LedgerRules.isVisible(
                ownerClientID: try row.decode("client_id"), ownerGameID: try row.decode("game_id"), to: client)
            ledger[id] = LedgerPresence(
                found: true, managementID: mine ? try row.decode("id") : nil,
                state: mine ? try TransactionRows.typed(row, "state", as: TransactionState.self) : nil,
                recordedForThisGame: mine, lastRefusal: refusal)
        }
        return ledger
    }

    /// The latest refused verification of this transaction by the client or its game, as it was
    /// answered (code, reason, message).
    func lastRefusal(store: StoreID, transactionID: String, client: ClientInfo) async throws -> StoreVerificationError?
    {
        let row = try await reads.query(
            """
            SELECT error_code, error_reason, error_message FROM (
                SELECT a.id, a.error_code, a.error_reason, a.error_message, a.client_id, c.game_id
                FROM verification_attempts a JOIN clients c ON c.id = a.client_id
                WHERE a.outcome = 'failed' AND a.store = \(store.rawValue) AND a.transaction_id = \(transactionID)) owned
            WHERE \(LedgerSQL.visible(to: client, owner: "owned"))
            ORDER BY id DESC LIMIT 1
            """
        ).first
        guard let row else { return nil }
        let code = ErrorCode(rawValue: try row.decode("error_code", as: String?.self) ?? "") ?? .verificationFailed
        return StoreVerificationError(
            code: code, reason: try row.decode("error_reason", as: String?.self) ?? code.rawValue,
            message: try row.decode("error_message", as: String?.self) ?? "")
    }
}
