package import Postgres
package import ReceiptCore

/// The ledger's rules (`LedgerRules`) where a statement must apply them itself: the tenancy rule
/// as a predicate a query filters or joins by, and the state rule as the `CASE` an upsert takes
/// on conflict. The state rule's `CASE` is generated from the Swift rule; the tenancy predicate
/// is checked against it over a table of cases (`LedgerSQLMatchesTheRules`).
package enum LedgerSQL {
    /// True where the caller, whose client id and game id are the SQL expressions `callerClient`
    /// and `callerGame`, may see the row `owner` (a table alias holding `client_id` and `game_id`).
    package static func visible(owner: String, callerClient: PostgresQuery, callerGame: PostgresQuery) -> PostgresQuery
    {
        "(\(unescaped: owner).client_id = \(callerClient) OR (\(unescaped: owner).game_id IS NOT NULL AND \(unescaped: owner).game_id = \(callerGame)))"
    }

    /// True where `client` may see the row `owner`.
    package static func visible(to client: ClientInfo, owner: String = "transactions") -> PostgresQuery {
        visible(owner: owner, callerClient: "\(client.clientID)", callerGame: "\(client.gameID)")
    }

    /// The rows of a purchase (its periods, when a subscription) that may make it someone's: claimed
    /// for a player. The first of them in `ownerClaimOrder` is its owner, for the claims of its
    /// later periods and for the entitlement index alike.
    package static func ownerClaim(_ row: String) -> String {
        "(\(row).claimed_at IS NOT NULL AND \(row).player_id IS NOT NULL)"
    }

    /// First claimed first; the row id breaks a tie within one clock tick.
    package static func ownerClaimOrder(_ row: String) -> String { "\(row).claimed_at, \(row).id" }

    /// True where a claim for the player `callerPlayer` (an SQL expression) of the recorded row
    /// `owner` is a plain repeat: what `LedgerRules.claim(of:by:)` answers `.repeated` for
    /// (claimed before, and not for another player). Checked against it in `LedgerSQLMatchesTheRules`.
    package static func claimIsRepeat(owner: String, callerPlayer: String) -> String {
        "(\(owner).claimed_at IS NOT NULL AND (\(owner).player_id IS NULL OR \(callerPlayer) IS NULL OR \(owner).player_id = \(callerPlayer)))"
    }

    /// The state a conflicting row of `transactions` takes on `news`: one branch per state the row
    /// may be in, each answered by `LedgerRules`, so the statement cannot decide differently.
    package static func state(after news: LedgerNews) -> PostgresQuery {
        var cases = PostgresQuery.StringInterpolation(
            literalCapacity: 64 * TransactionState.allCases.count,
            interpolationCount: 2 * TransactionState.allCases.count)
        cases.appendLiteral("CASE transactions.state")
        for recorded in TransactionState.allCases {
            cases.appendLiteral(" WHEN ")
            cases.appendInterpolation(recorded.rawValue)
            cases.appendLiteral(" THEN ")
            cases.appendInterpolation(LedgerRules.state(of: recorded, after: news).rawValue)
        }
        // A state this build does not know: the row is left as it is rather than guessed at.
        cases.appendLiteral(" ELSE transactions.state END")
        return PostgresQuery(stringInterpolation: cases)
    }
}
