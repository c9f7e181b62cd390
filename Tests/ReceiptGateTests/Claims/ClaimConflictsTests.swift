import AppStoreTestSupport
import Foundation
import ReceiptGate
import TestSupport
import Testing

/// One purchase claimed for two players of the same game: the second claim is a duplicate that
/// names the first claimant, and the game server is told of the conflict once.
@Suite struct ClaimConflicts {
    static let id = "2000000000760001"
    static let alice = ["player_id": "alice", "character_id": "alice-knight", "server_id": "eu-1"]
    static let bob = ["player_id": "bob", "character_id": "bob-mage", "server_id": "us-2"]
    static let adminToken = "claims-admin-token-0123456789abcdef"

    /// Alice claims it, Alice again, Bob, Alice once more: every answer, in that order.
    static func claimForAliceThenBob(_ harness: VerifyHarness) async throws -> [[String: Any]] {
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id]))
        var answers: [[String: Any]] = []
        for player in [alice, alice, bob, alice] {
            let answer = try await ClaimSupport.claim(harness.client, receipt: receipt, for: player)
            #expect(answer.status == 200, "\(answer.text)")
            answers.append(try answer.json())
        }
        return answers
    }

    static func isClaimant(_ value: Any?, _ player: [String: String]) -> Bool {
        guard let claimant = value as? [String: Any] else { return false }
        return ["player_id", "character_id", "server_id"].allSatisfy { claimant[$0] as? String == player[$0] }
    }

    @Test func bobsClaimOfAlicesPurchaseIsADuplicateNamingAliceAndOneConflictWebhook() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let answers = try await Self.claimForAliceThenBob(harness)
        try #require(answers.count == 4)
        #expect(answers.map { $0["duplicate"] as? Bool } == [false, true, true, true])
        #expect(answers[0]["first_claimed_by"] is NSNull, "the first claim conflicts with nothing: \(answers[0])")
        #expect(answers[1]["first_claimed_by"] is NSNull, "Alice again is a plain repeat: \(answers[1])")
        #expect(
            Self.isClaimant(answers[2]["first_claimed_by"], Self.alice),
            "Bob is told Alice claimed it first: \(answers[2])")
        #expect(answers[3]["first_claimed_by"] is NSNull, "Alice after Bob is still her own purchase: \(answers[3])")
        let ids = Set(answers.compactMap { ($0["transaction"] as? [String: Any])?["id"] as? Int })
        #expect(ids.count == 1, "every answer names the same record")

        let record = try await ClaimSupport.record(harness.client, Self.id).transaction
        #expect(
            (record["claim"] as? [String: Any])?["player_id"] as? String == "alice",
            "the first claim stays on the record: \(record)")
        try await OutboxDrain.wait(harness.pool)
        let conflicts = ClaimSupport.received(receiver, "transaction.claim_conflict", about: Self.id)
        #expect(conflicts.count == 1, "one conflict, Bob's; Alice's repeats are none: \(receiver.bodies("/hooks"))")
        let conflict = try #require(conflicts.first)
        #expect((conflict["transaction"] as? [String: Any])?["transaction_id"] as? String == Self.id)
        #expect(Self.isClaimant(conflict["first_claimed_by"], Self.alice), "\(conflict)")
        #expect(Self.isClaimant(conflict["claimed_by"], Self.bob), "\(conflict)")
        #expect(ClaimSupport.received(receiver, "transaction.verified", about: Self.id).count == 1)
        #expect(
            ClaimSupport.received(receiver, "entitlement.delivery", about: Self.id).count == 1,
            "delivered to Alice only")
        #expect(
            ClaimSupport.received(receiver, "entitlement.delivery", about: Self.id).first?["player_id"] as? String
                == "alice")
        await harness.service.shutdown()
    }

    @Test func theConsolesPurchasePageShowsTheFirstClaimantAndTheConflict() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver, adminToken: Self.adminToken)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.adminToken)
        let unclaimed = try await browser.get("/console/purchases/app_store/\(Self.id)")
        #expect(unclaimed.status == 404, "nothing recorded yet")

        _ = try await Self.claimForAliceThenBob(harness)
        let page = try await browser.get("/console/purchases/app_store/\(Self.id)")
        #expect(page.status == 200)
        let text = page.text.lowercased()
        #expect(
            text.contains("first claimed by") || text.contains("claim conflict"),
            "the page says the purchase was claimed twice")
        #expect(text.contains("alice"), "the first claimant is shown")
        #expect(text.contains("bob"), "the conflicting claimant is shown")
        await harness.service.shutdown()
    }
}
