import Foundation
import Postgres
import ReceiptCore

/// Purchases the batch statement did not insert because a row already holds them: retries,
/// restores, another game's purchase. A row a store told us of and nobody claimed yet, or one
/// claimed for another player, is handed back: its claim owes effects the ordinary path writes.
/// The others are settled together by a second statement on the same connection, which answers
/// as the ordinary path does: the stored row (a duplicate, with its own
/// state), or "another game's" when the caller may not see it, each with its attempt row. Not
/// prepared: it reads rows by key, and planned each time its plan follows the table's real size;
/// it runs only when a batch held such purchases. The stored row is the answer as it stands: only
/// evidence of an active purchase is batched, and by `LedgerRules` such evidence never moves a
/// recorded state.
extension RecordBatcher {
    /// False when the connection failed.
    func settleSeenBefore(_ items: [(ordinal: Int, item: Item)], on connection: PostgresConnection) -> Bool {
        let rows: [PostgresRow]
        do {
            rows = try connection.query(
                "\(unescaped: Self.sqlHead)\(Self.itemsJSON(items))\(unescaped: Self.sqlInput + Self.lookupTail)")
        } catch let error as PostgresError where error.code == .queryFailed {
            items.forEach { $0.item.continuation.resume(returning: .contended) }
            return true
        } catch {
            // Whether the attempt rows were written is unknown: say so rather than retry.
            items.forEach { $0.item.continuation.resume(throwing: error) }
            return false
        }
        let byOrdinal = Self.byOrdinal(rows)
        for (ordinal, item) in items {
            item.continuation.resume(with: Swift.Result { try Self.seenBeforeResult(byOrdinal[ordinal], item: item) })
        }
        return true
    }

    private static func seenBeforeResult(_ row: PostgresRow?, item: Item) throws -> Result {
        guard let row else { return .contended }
        switch try row.decode("batch_status", as: String.self) {
        case "stale": return .stale
        case "foreign": return .foreign
        case "duplicate":
            return .recorded(
                VerificationOutcome(
                    transaction: try TransactionRows.transaction(row), duplicate: true,
                    accountMatch: item.proven.accountMatch, subscription: nil))
        default: return .contended  // inserted by a transaction not yet committed: the ordinary path waits for it
        }
    }

    /// Each caller's fields with the stored row and whether the caller may see it (the tenancy
    /// rule, `LedgerSQL.visible`); an attempt row for each visible one.
    private static let lookupTail = """
        , found AS (
            SELECT ck.ord, \(LedgerSQL.visible(owner: "t", callerClient: "ck.client_id", callerGame: "ck.game_id").sql) AS visible,
                   \(LedgerSQL.claimIsRepeat(owner: "t", callerPlayer: "ck.player_id")) AS repeat,
                   ck.client_id AS caller_id, ck.request_id AS caller_request_id, ck.player_id AS caller_player_id,
                   ck.evidence_sha256 AS caller_evidence, t.*
            FROM checked ck
                JOIN transactions t ON t.store = ck.store AND t.environment = ck.environment AND t.transaction_id = ck.transaction_id
        ), attempts AS (
            INSERT INTO verification_attempts (client_id, store, request_id, outcome, transaction_row_id, duplicate, player_id, evidence_sha256)
            SELECT caller_id, store, caller_request_id, 'verified', id, true, caller_player_id, caller_evidence FROM found WHERE visible AND repeat
        )
        SELECT input.ord AS batch_ord,
               CASE WHEN ck.ord IS NULL THEN 'stale' WHEN f.ord IS NULL THEN 'contended' WHEN NOT f.visible THEN 'foreign'
                    WHEN NOT f.repeat THEN 'contended' ELSE 'duplicate' END
                   AS batch_status, f.*
        FROM input LEFT JOIN checked ck ON ck.ord = input.ord LEFT JOIN found f ON f.ord = input.ord
        """
}
