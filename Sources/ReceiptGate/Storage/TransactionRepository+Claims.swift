import Foundation
import Postgres
import ReceiptCore

/// How a verification claims its purchase: the unique key decides whether the row is new, and a
/// known row (a store told us first) is claimed by one `UPDATE … WHERE claimed_at IS NULL`, so
/// however many claims race, across processes, exactly one is first.
extension TransactionRepository {
    /// What the claim found, before any effect is queued.
    struct ClaimedRow {
        var transaction: TransactionRecord
        /// The purchase the claim took (one of the evidence's, when it holds several).
        var proven: ProvenPurchase
        /// The row was written now, by this claim.
        var inserted: Bool
        var claim: ClaimOutcome
    }

    /// Claims the oldest purchase of `proven.claimOrder` not yet claimed (or `proven.purchase`
    /// when the evidence names one); when every one is claimed, answers the newest as a duplicate.
    /// Throws REDEEMED_BY_ANOTHER_GAME when the purchase is another game's.
    static func claim(
        _ proven: ProvenPurchase, client: Client, at now: Date, on connection: PostgresConnection
    ) throws -> ClaimedRow {
        let candidates = proven.claimOrder.isEmpty ? [proven] : proven.claimOrder.map(proven.about)
        var repeated: ClaimedRow?
        for candidate in candidates {
            let found = try claimOne(candidate, client: client, at: now, on: connection)
            if found.claim.isFirst { return found }
            repeated = found
        }
        guard let repeated else { throw PostgresError(.queryFailed, "a claim had no purchase to take") }
        return repeated
    }

    private static func claimOne(
        _ proven: ProvenPurchase, client: Client, at now: Date, on connection: PostgresConnection
    ) throws -> ClaimedRow {
        let purchase = proven.purchase
        let claimant = proven.claimant
        // A period claimed already can be claimed first by nobody, so its repeats need not queue
        // behind the subscription's lock (a game that verifies on every launch, a retry storm).
        if let claimed = try claimedPeriod(purchase, client: client, on: connection) {
            let owner = try subscriptionOwner(of: purchase, client: client, locking: false, on: connection)
            return ClaimedRow(
                transaction: claimed, proven: proven, inserted: false,
                claim: LedgerRules.claim(of: claimed.claim, owner: owner, by: claimant))
        }
        // One period of a subscription is decided against the subscription's owner, not its own row:
        // its periods are claimed one by one, and each must go to whoever claimed the first.
        let owner = try subscriptionOwner(of: purchase, client: client, on: connection)
        if let owner, !LedgerRules.mayTakePeriod(ownedBy: owner, by: claimant) {
            return try recordUnclaimed(proven, owner: owner, client: client, at: now, on: connection)
        }
        let newRow = NewTransactionRow(
            purchase: purchase, state: LedgerRules.state(of: purchase, at: now), clientID: client.clientID,
            gameID: client.gameID,
            claimant: claimant)
        if let row = try connection.query(
            """
            INSERT INTO transactions (\(unescaped: TransactionColumns.names)) VALUES (\(TransactionColumns.values(newRow)))
            ON CONFLICT (store, environment, transaction_id) DO NOTHING
            RETURNING \(unescaped: TransactionRows.columns)
            """
        ).first {
            return ClaimedRow(
                transaction: try TransactionRows.transaction(row), proven: proven, inserted: true, claim: .first)
        }
        // Known from the store and not claimed: the first claim takes it, for the claiming client.
        if let row = try connection.query(
            """
            UPDATE transactions SET claimed_at = now(), first_verified_at = now(), client_id = \(client.clientID), game_id = \(client.gameID),
                player_id = \(claimant.playerID), character_id = \(claimant.characterID), server_id = \(claimant.serverID),
                game_version = \(claimant.gameVersion), updated_at = now()
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND transaction_id = \(purchase.transactionID)
              AND claimed_at IS NULL AND \(LedgerSQL.visible(to: client.info))
            RETURNING \(unescaped: TransactionRows.columns)
            """
        ).first {
            return ClaimedRow(
                transaction: try TransactionRows.transaction(row), proven: proven, inserted: false, claim: .first)
        }
        let transaction = try existing(purchase, client: client, on: connection)
        return ClaimedRow(
            transaction: transaction, proven: proven, inserted: false,
            claim: LedgerRules.claim(of: transaction.claim, owner: owner, by: claimant))
    }

    /// A period of another player's subscription: recorded as known when new (the store proved it),
    /// claimed for nobody, so its owner's own claim of it is still their first; answered as the
    /// owner's claim answers it: a conflict naming the owner, or a plain duplicate for a claim that
    /// names no player.
    private static func recordUnclaimed(
        _ proven: ProvenPurchase, owner: Claim, client: Client, at now: Date, on connection: PostgresConnection
    ) throws -> ClaimedRow {
        let purchase = proven.purchase
        let known = NewTransactionRow(
            purchase: purchase, state: LedgerRules.state(of: purchase, at: now), clientID: client.clientID,
            gameID: client.gameID
        )
        let outcome = LedgerRules.claim(of: owner, owner: owner, by: proven.claimant)
        if let row = try connection.query(
            """
            INSERT INTO transactions (\(unescaped: TransactionColumns.names)) VALUES (\(TransactionColumns.values(known)))
            ON CONFLICT (store, environment, transaction_id) DO NOTHING
            RETURNING \(unescaped: TransactionRows.columns)
            """
        ).first {
            return ClaimedRow(
                transaction: try TransactionRows.transaction(row), proven: proven, inserted: true, claim: outcome)
        }
        return ClaimedRow(
            transaction: try existing(purchase, client: client, on: connection), proven: proven, inserted: false,
            claim: outcome)
    }

    /// The stored row of `purchase` when it is a subscription's period the caller may see, claimed
    /// already; nil for anything else, which takes the claim's ordinary course. Its owner needs no
    /// lock then: one that has committed stays the owner (another player's claim takes no period,
    /// `LedgerRules.mayTakePeriod`), and where none has yet, the answer is the one this claim gets
    /// had it come before a claim still in flight.
    private static func claimedPeriod(
        _ purchase: VerifiedPurchase, client: Client, on connection: PostgresConnection
    ) throws -> TransactionRecord? {
        guard LedgerRules.isSubscriptionPeriod(purchase), let transaction = try stored(purchase, on: connection),
            transaction.claim != nil, LedgerRules.isVisible(transaction, to: client.info)
        else { return nil }
        return transaction
    }

    /// The row of `purchase`, if the ledger holds one.
    private static func stored(
        _ purchase: VerifiedPurchase, on connection: PostgresConnection
    ) throws
        -> TransactionRecord?
    {
        try connection.query(
            """
            SELECT \(unescaped: TransactionRows.columns) FROM transactions
            WHERE store = \(purchase.store.rawValue) AND environment = \(purchase.environment.rawValue) AND transaction_id = \(purchase.transactionID)
            """
        ).first.map(TransactionRows.transaction)
    }

    /// The stored row of `purchase`. Throws REDEEMED_BY_ANOTHER_GAME when the caller may not see it.
    private static func existing(
        _ purchase: VerifiedPurchase, client: Client, on connection: PostgresConnection
    ) throws -> TransactionRecord {
        guard let transaction = try stored(purchase, on: connection) else {
            throw PostgresError(.queryFailed, "conflicting transaction row vanished")
        }
        guard LedgerRules.isVisible(transaction, to: client.info) else {
            throw StoreVerificationError(
                code: .duplicateTransaction, reason: "REDEEMED_BY_ANOTHER_GAME",
                message: "this purchase was already verified for another game")
        }
        return transaction
    }

    /// The advisory-lock class of subscription claims (the two-key form, apart from the catalog
    /// scopes' and the entitlement index's).
    static let subscriptionLockClass: Int32 = 0x5247_5355  // "RGSU"

    /// The first claim naming a player of any period of `purchase`'s subscription that the client
    /// may see (nil: none yet, or not a subscription period). Holds the subscription's lock until
    /// the transaction ends first, so two periods claimed at once for two players cannot both be
    /// first: the second waits and finds the first's owner. Without `locking`, for a claim that
    /// cannot be first (`claimedPeriod`).
    static func subscriptionOwner(
        of purchase: VerifiedPurchase, client: Client, locking: Bool = true, on connection: PostgresConnection
    ) throws -> Claim? {
        guard LedgerRules.isSubscriptionPeriod(purchase) else { return nil }
        let original = purchase.originalTransactionID ?? purchase.transactionID
        let store = purchase.store.rawValue, environment = purchase.environment.rawValue
        if locking {
            try connection.execute(
                """
                SELECT pg_advisory_xact_lock(\(subscriptionLockClass), hashtext(\(store)::text || '/' || \(environment)::text || '/' || \(original)::text))
                """)
        }
        return try connection.query(
            """
            SELECT \(unescaped: TransactionRows.columns) FROM (
                SELECT * FROM transactions WHERE store = \(store) AND environment = \(environment) AND original_transaction_id = \(original)
                UNION ALL
                SELECT * FROM transactions WHERE store = \(store) AND environment = \(environment) AND transaction_id = \(original)
                  AND original_transaction_id IS DISTINCT FROM \(original)) transactions
            WHERE \(unescaped: LedgerSQL.ownerClaim("transactions")) AND \(LedgerSQL.visible(to: client.info))
            ORDER BY \(unescaped: LedgerSQL.ownerClaimOrder("transactions")) LIMIT 1
            """
        ).first.flatMap { try TransactionRows.transaction($0).claim }
    }

    /// The conflict webhook: the purchase was first claimed for another player of this game.
    static func announceConflict(
        _ transaction: TransactionRecord, first: Claimant, now claimant: Claimant, client: Client,
        on connection: PostgresConnection
    ) throws {
        guard client.webhookURL != nil else { return }
        try OutboxRepository.enqueue(
            event: "transaction.claim_conflict",
            payload: ClaimConflict(
                transaction: NativeTransaction(transaction), firstClaimedBy: first, claimedBy: claimant),
            client: client.clientID, aggregateKey: "\(transaction.store.rawValue):\(transaction.originalOrSelf)",
            on: connection)
    }
}
