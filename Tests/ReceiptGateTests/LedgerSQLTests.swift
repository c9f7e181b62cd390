import Foundation
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// The SQL the ledger's statements decide with gives the answers of `LedgerRules`, case by case,
/// on a real Postgres: a read never shows a client what the rule hides (or hides what it shows),
/// and a notification moves a row as the rule says.
@Suite struct LedgerSQLMatchesTheRules {
    static let games: [Int64?] = [nil, 1, 2]

    @Test func theVisibilityPredicateAnswersAsTheRuleForEveryCombination() async throws {
        let pool = PostgresPool(
            .init(connectionString: try await TestDatabase.makeDatabase(prefix: "ledgersql"), size: 1))
        defer { pool.shutdown() }
        for owner in ["rgc_a", "rgc_b"] {
            for ownerGame in Self.games {
                for callerGame in Self.games {
                    let caller = ClientInfo(clientID: "rgc_a", gameID: callerGame)
                    let rows = try await pool.query(
                        """
                        SELECT \(LedgerSQL.visible(to: caller, owner: "owned")) IS TRUE AS visible
                        FROM (SELECT \(owner)::text AS client_id, \(ownerGame)::bigint AS game_id) owned
                        """)
                    let sql = try rows[0].decode("visible", as: Bool.self)
                    let rule = LedgerRules.isVisible(ownerClientID: owner, ownerGameID: ownerGame, to: caller)
                    #expect(
                        sql == rule,
                        "owner \(owner) game \(String(describing: ownerGame)), caller game \(String(describing: callerGame))"
                    )
                }
            }
        }
    }

    /// The batch's form of the predicate compares two rows' columns instead of bound values.
    @Test func theColumnFormAnswersAsTheRuleForEveryCombination() async throws {
        let pool = PostgresPool(
            .init(connectionString: try await TestDatabase.makeDatabase(prefix: "ledgersql"), size: 1))
        defer { pool.shutdown() }
        let predicate = LedgerSQL.visible(owner: "t", callerClient: "ck.client_id", callerGame: "ck.game_id")
        for owner in ["rgc_a", "rgc_b"] {
            for ownerGame in Self.games {
                for callerGame in Self.games {
                    let rows = try await pool.query(
                        """
                        SELECT \(predicate) IS TRUE AS visible
                        FROM (SELECT \(owner)::text AS client_id, \(ownerGame)::bigint AS game_id) t,
                             (SELECT 'rgc_a'::text AS client_id, \(callerGame)::bigint AS game_id) ck
                        """)
                    let rule = LedgerRules.isVisible(
                        ownerClientID: owner, ownerGameID: ownerGame,
                        to: ClientInfo(clientID: "rgc_a", gameID: callerGame))
                    #expect(try rows[0].decode("visible", as: Bool.self) == rule)
                }
            }
        }
    }

    @Test func theUpsertsStateCaseMovesEveryRecordedStateAsTheRule() async throws {
        let pool = PostgresPool(
            .init(connectionString: try await TestDatabase.makeDatabase(prefix: "ledgersql"), size: 1))
        defer { pool.shutdown() }
        let everyNews = TransactionState.allCases.flatMap { [LedgerNews.evidence($0), .storeEvent($0), .reversal($0)] }
        for news in everyNews {
            for recorded in TransactionState.allCases {
                let rows = try await pool.query(
                    """
                    SELECT \(LedgerSQL.state(after: news)) AS state FROM (SELECT \(recorded.rawValue)::text AS state) transactions
                    """)
                #expect(
                    try rows[0].decode("state", as: String.self)
                        == LedgerRules.state(of: recorded, after: news).rawValue, "\(recorded) after \(news)")
            }
        }
    }

    /// The group commit settles a purchase seen before only when the claim is a plain repeat; a
    /// known row or a claim for another player goes the ordinary way, which writes its effects.
    @Test func theClaimRepeatPredicateAnswersAsTheRuleForEveryCombination() async throws {
        let pool = PostgresPool(
            .init(connectionString: try await TestDatabase.makeDatabase(prefix: "ledgersql"), size: 1))
        defer { pool.shutdown() }
        let players: [String?] = [nil, "alice", "bob"]
        for claimed in [false, true] {
            for firstPlayer in players {
                for caller in players {
                    let rows = try await pool.query(
                        """
                        SELECT \(unescaped: LedgerSQL.claimIsRepeat(owner: "t", callerPlayer: "ck.player_id")) IS TRUE AS repeat
                        FROM (SELECT \(claimed ? Date() : nil)::timestamptz AS claimed_at, \(firstPlayer)::text AS player_id) t,
                             (SELECT \(caller)::text AS player_id) ck
                        """)
                    let recorded = claimed ? Claim(claimant: Claimant(playerID: firstPlayer), claimedAt: Date()) : nil
                    let rule = LedgerRules.claim(of: recorded, by: Claimant(playerID: caller)) == .repeated
                    #expect(
                        try rows[0].decode("repeat", as: Bool.self) == rule,
                        "claimed \(claimed), first \(String(describing: firstPlayer)), caller \(String(describing: caller))"
                    )
                }
            }
        }
    }
}
