import Foundation
import ReceiptCore
import Testing

/// What state a purchase is in and how it moves: the answers a game server acts on (deliver,
/// claw back, stop a subscription's benefits).
@Suite struct TransactionStateRule {
    static let now = Date(timeIntervalSince1970: 1_780_000_000)

    static func purchase(expires: TimeInterval? = nil, revokedWithReason reason: String?? = nil) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(
            store: StoreID(rawValue: "app_store"), environment: .production, transactionID: "2000000000000001")
        purchase.expiresDate = expires.map { now.addingTimeInterval($0) }
        if let reason {
            purchase.revocationDate = now.addingTimeInterval(-60)
            purchase.revocationReason = reason
        }
        return purchase
    }

    @Test func aProvenPurchaseIsActiveUntilItsPeriodEnds() {
        #expect(LedgerRules.state(of: Self.purchase(), at: Self.now) == .active)
        #expect(LedgerRules.state(of: Self.purchase(expires: 60), at: Self.now) == .active)
        #expect(LedgerRules.state(of: Self.purchase(expires: -60), at: Self.now) == .expired)
    }

    @Test func aRevocationWithAReasonIsARefundAndWithoutOneARevocation() {
        #expect(
            LedgerRules.state(of: Self.purchase(revokedWithReason: "refunded_due_to_issue"), at: Self.now) == .refunded)
        #expect(LedgerRules.state(of: Self.purchase(revokedWithReason: .some(nil)), at: Self.now) == .revoked)
        // Taken back counts before the period: a refunded subscription whose month is over is refunded.
        #expect(
            LedgerRules.state(of: Self.purchase(expires: -60, revokedWithReason: "other"), at: Self.now) == .refunded)
    }

    @Test(arguments: [TransactionState.refunded, .revoked])
    func aRefundOrRevocationIsNotUndoneByALaterExpiryRenewalOrRetry(withdrawn: TransactionState) {
        #expect(LedgerRules.state(of: withdrawn, after: .storeEvent(.expired)) == withdrawn)
        #expect(LedgerRules.state(of: withdrawn, after: .storeEvent(.active)) == withdrawn)
    }

    @Test func onlyTheStoresReversalReinstatesARefund() {
        #expect(LedgerRules.state(of: .refunded, after: .reversal(.active)) == .active)
        #expect(LedgerRules.state(of: .revoked, after: .reversal(.expired)) == .expired)
        // A reversal reinstates what the purchase's dates say: a period already over is expired.
        let refundedMonth = Self.purchase(expires: -60, revokedWithReason: "other")
        #expect(LedgerRules.stateAfterReversal(of: refundedMonth, at: Self.now) == .expired)
        #expect(
            LedgerRules.stateAfterReversal(of: Self.purchase(expires: 60, revokedWithReason: "other"), at: Self.now)
                == .active)
    }

    @Test func aStoreEventIsTheStoresLatestWordOtherwise() {
        #expect(LedgerRules.state(of: .active, after: .storeEvent(.expired)) == .expired)
        #expect(LedgerRules.state(of: .active, after: .storeEvent(.refunded)) == .refunded)
        #expect(LedgerRules.state(of: .expired, after: .storeEvent(.refunded)) == .refunded)
        // A renewal extended past the old expiry brings the transaction back.
        #expect(LedgerRules.state(of: .expired, after: .storeEvent(.active)) == .active)
        #expect(LedgerRules.state(of: .refunded, after: .storeEvent(.revoked)) == .revoked)
    }

    @Test func presentedEvidenceOnlyTellsAnActiveRecordThatItEnded() {
        for proven in TransactionState.allCases {
            #expect(LedgerRules.state(of: .active, after: .evidence(proven)) == proven)
        }
        // Evidence may be old: it never revives a record the ledger saw end.
        for recorded in TransactionState.allCases where recorded != .active {
            for proven in TransactionState.allCases {
                #expect(
                    LedgerRules.state(of: recorded, after: .evidence(proven)) == recorded,
                    "\(recorded) after evidence \(proven)")
            }
        }
    }

    @Test func aRecordUpdatedByEvidenceTakesTheStoresDatesAndKeepsWhatTheEvidenceLacks() throws {
        let recordedExpiry = Self.now.addingTimeInterval(3600)
        var record = TransactionRecord(
            recording: Self.purchase(expires: 3600), managementID: 7, state: .active, clientID: "rgc_a", gameID: 1,
            firstVerifiedAt: Self.now)
        record.expiresDate = recordedExpiry
        let refunded = Self.purchase(revokedWithReason: "refunded_due_to_issue")
        let updated = try #require(record.updated(byEvidence: refunded, at: Self.now))
        #expect(updated.state == .refunded)
        #expect(updated.revocationDate == refunded.revocationDate)
        #expect(updated.revocationReason == "refunded_due_to_issue")
        #expect(updated.expiresDate == recordedExpiry)
        #expect(updated.managementID == 7)
        #expect(
            record.updated(byEvidence: Self.purchase(expires: 3600), at: Self.now) == nil,
            "active evidence changes nothing")
    }
}

/// Which transactions a client may see: what keeps one game's purchases out of another's reads.
@Suite struct VisibilityRule {
    @Test(
        arguments: [
            ("rgc_a", nil, "rgc_a", nil, true),  // its own, no game
            ("rgc_a", 1, "rgc_a", 2, true),  // its own, whatever the games say
            ("rgc_b", 1, "rgc_a", 1, true),  // another client of its game
            ("rgc_b", 2, "rgc_a", 1, false),  // another game
            ("rgc_b", nil, "rgc_a", nil, false),  // two clients without a game share nothing
            ("rgc_b", nil, "rgc_a", 1, false),
            ("rgc_b", 1, "rgc_a", nil, false),
        ] as [(String, Int64?, String, Int64?, Bool)])
    func aClientSeesItsOwnAndItsGamesTransactions(
        owner: String, ownerGame: Int64?, caller: String, callerGame: Int64?, visible: Bool
    ) {
        let client = ClientInfo(clientID: caller, gameID: callerGame)
        #expect(LedgerRules.isVisible(ownerClientID: owner, ownerGameID: ownerGame, to: client) == visible)
        var record = TransactionRecord(
            managementID: 1, store: StoreID(rawValue: "app_store"), environment: .production, transactionID: "1",
            state: .active,
            clientID: owner, firstVerifiedAt: Date())
        record.gameID = ownerGame
        #expect(LedgerRules.isVisible(record, to: client) == visible)
    }
}
