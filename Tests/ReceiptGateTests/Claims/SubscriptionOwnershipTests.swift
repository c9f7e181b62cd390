import AppStoreTestSupport
import Foundation
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A subscription's periods belong to the player who claimed it first: a later period shown by
/// another player (a shared or resold account, a leaked JWS) is a duplicate naming the owner, a
/// conflict the game server is told of, and delivered to nobody; the owner's own claim of that
/// period is theirs, never a conflict.
@Suite struct SubscriptionOwnership {
    static let alice = ["player_id": "alice", "character_id": "alice-knight", "server_id": "eu-1"]
    static let bob = ["player_id": "bob", "character_id": "bob-mage", "server_id": "us-2"]

    /// Period `id` of the subscription first bought as `original`.
    static func period(_ harness: VerifyHarness, _ id: String, of original: String) throws -> String {
        try harness.pki.sign(AppleTestPKI.transaction(ClaimSupport.subscription(id, original: original)))
    }

    static func claimedBy(_ answer: [String: Any]) -> String? {
        (answer["first_claimed_by"] as? [String: Any])?["player_id"] as? String
    }

    @Test func aLaterPeriodShownByAnotherPlayerIsTheOwnersNotTheirs() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        _ = try await harness.service.repositories.catalog.set(
            client: harness.client.clientID, store: "app_store", product: "vip.monthly",
            entitlements: ["vip"], by: "test")
        let original = "2000000000810001", renewal = "2000000000810002"

        let first = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, original, of: original), for: Self.alice)
        let firstAnswer = try first.json()
        #expect(first.status == 200 && firstAnswer["duplicate"] as? Bool == false, "\(first.text)")

        // Bob shows the second period before Alice does.
        let bobs = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, renewal, of: original), for: Self.bob)
        #expect(bobs.status == 200, "\(bobs.text)")
        let bobsAnswer = try bobs.json()
        #expect(
            bobsAnswer["duplicate"] as? Bool == true,
            "a period of Alice's subscription is not Bob's first verification: \(bobsAnswer)")
        #expect(Self.claimedBy(bobsAnswer) == "alice", "Bob is told whose it is: \(bobsAnswer)")

        // Alice's own claim of it is hers: a first verification, delivered to her, no conflict.
        let alices = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, renewal, of: original), for: Self.alice)
        let alicesAnswer = try alices.json()
        #expect(
            alicesAnswer["duplicate"] as? Bool == false,
            "the owner's claim of the period is never a conflict: \(alicesAnswer)")
        #expect(alicesAnswer["first_claimed_by"] is NSNull, "\(alicesAnswer)")
        let again = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, renewal, of: original), for: Self.alice)
        let againAnswer = try again.json()
        #expect(
            againAnswer["duplicate"] as? Bool == true && Self.claimedBy(againAnswer) == nil,
            "then a plain repeat: \(again.text)")

        let record = try await ClaimSupport.record(harness.client, renewal).transaction
        #expect(
            (record["claim"] as? [String: Any])?["player_id"] as? String == "alice",
            "the period's claim is Alice's: \(record)")

        try await OutboxDrain.wait(harness.pool)
        let conflicts = ClaimSupport.received(receiver, "transaction.claim_conflict", about: renewal)
        #expect(conflicts.count == 1, "one conflict, Bob's: \(receiver.bodies("/hooks"))")
        #expect(
            ClaimConflicts.isClaimant(conflicts.first?["claimed_by"], Self.bob),
            "the conflict names the newcomer: \(conflicts)")
        #expect(
            ClaimConflicts.isClaimant(conflicts.first?["first_claimed_by"], Self.alice), "and the owner: \(conflicts)")
        let deliveries = ClaimSupport.received(receiver, "entitlement.delivery", about: renewal)
        #expect(
            deliveries.map { $0["player_id"] as? String } == ["alice"], "delivered to the owner only: \(deliveries)")

        let owners = try await harness.pool.query(
            "SELECT player_id FROM player_entitlements WHERE entitlement = 'vip' ORDER BY player_id")
        #expect(
            try owners.map { try $0.decode("player_id", as: String.self) } == ["alice"],
            "the answers and the index agree")
        await harness.service.shutdown()
    }

    /// A period claimed already has its answer settled: its repeats, the owner's and another
    /// player's, are answered while a claim of the subscription holds its lock (so a storm of
    /// them never queues behind it), the owner's as a plain repeat, the other's as a conflict.
    @Test func repeatsOfAClaimedPeriodDoNotWaitForTheSubscriptionsLock() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let original = "2000000000880001"
        let receipt = try Self.period(harness, original, of: original)
        let first = try await ClaimSupport.claim(harness.client, receipt: receipt, for: Self.alice)
        let firstAnswer = try first.json()
        #expect(first.status == 200 && firstAnswer["duplicate"] as? Bool == false, "\(first.text)")

        let held = HeldSession(
            pool: harness.pool,
            [
                """
                SELECT pg_advisory_lock(\(TransactionRepository.subscriptionLockClass),
                    hashtext(store || '/' || environment || '/' || original_transaction_id))
                FROM transactions WHERE transaction_id = '\(original)'
                """
            ], finally: "SELECT pg_advisory_unlock_all()")
        let (again, bobs) = try await Self.releasing(held) {
            try await WebhookDelivery.waitUntil {
                try await harness.pool.query(
                    """
                    SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND granted
                      AND classid = \(TransactionRepository.subscriptionLockClass)
                      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """)[0].decode("n", as: Int.self) == 1
            }
            return (
                try await ClaimSupport.claim(harness.client, receipt: receipt, for: Self.alice),
                try await ClaimSupport.claim(harness.client, receipt: receipt, for: Self.bob)
            )
        }
        let againAnswer = try again.json(), bobsAnswer = try bobs.json()
        #expect(again.status == 200 && againAnswer["duplicate"] as? Bool == true, "\(again.text)")
        #expect(Self.claimedBy(againAnswer) == nil, "the owner's repeat is plain: \(again.text)")
        #expect(bobs.status == 200 && bobsAnswer["duplicate"] as? Bool == true, "\(bobs.text)")
        #expect(Self.claimedBy(bobsAnswer) == "alice", "Bob is told whose it is: \(bobs.text)")
        await harness.service.shutdown()
    }

    /// A repeat bringing a refund whose row another writer is refunding at that moment (a second
    /// launch's retry, Apple's notification) waits for it, then answers what the row now is: never
    /// the state it read before the other commit.
    @Test func aRepeatRacingAnotherWritersRefundAnswersTheRefund() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let original = "2000000000890001"
        let first = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, original, of: original), for: Self.alice)
        #expect(first.status == 200, "\(first.text)")
        var refunded = ClaimSupport.subscription(original)
        refunded["revocationDate"] = ClaimSupport.now()
        refunded["revocationReason"] = 0
        let refundedReceipt = try harness.pki.sign(AppleTestPKI.transaction(refunded))

        let here = "datname = current_database()"
        let other = HeldSession(
            pool: harness.pool,
            ["BEGIN", "UPDATE transactions SET state = 'refunded' WHERE transaction_id = '\(original)'"],
            finally: "COMMIT")
        let repeated = try await Self.releasing(other) {
            try await WebhookDelivery.waitUntil {
                try await harness.pool.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE \(unescaped: here) AND state = 'idle in transaction'"
                )[0].decode("n", as: Int.self) == 1
            }
            let claim = Task {
                try await ClaimSupport.claim(harness.client, receipt: refundedReceipt, for: Self.alice)
            }
            // The repeat read the row as active and waits for the other writer's row lock.
            try await WebhookDelivery.waitUntil {
                try await harness.pool.query(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE \(unescaped: here) AND wait_event_type = 'Lock'"
                )[0].decode("n", as: Int.self) == 1
            }
            return claim
        }
        let answer = try await repeated.value
        #expect(answer.status == 200, "\(answer.text)")
        #expect(try answer.json()["status"] as? String == "refunded", "\(answer.text)")
        await harness.service.shutdown()
    }

    /// `body`'s result, `held` released after it whether it threw or not.
    static func releasing<T: Sendable>(_ held: HeldSession, _ body: () async throws -> T) async throws -> T {
        do {
            let result = try await body()
            try await held.release()
            return result
        } catch {
            try? await held.release()
            throw error
        }
    }

    /// A claim that names no player cannot show it is the owner's: it takes nothing from them.
    @Test func aClaimNamingNoPlayerTakesNoPeriodFromTheOwner() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let original = "2000000000860001", renewal = "2000000000860002"
        _ = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, original, of: original), for: Self.alice)
        let nameless = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, renewal, of: original), for: [:])
        let namelessAnswer = try nameless.json()
        #expect(
            namelessAnswer["duplicate"] as? Bool == true && namelessAnswer["first_claimed_by"] is NSNull,
            "\(nameless.text)")
        let alices = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, renewal, of: original), for: Self.alice)
        #expect(
            (try alices.json())["duplicate"] as? Bool == false, "still the owner's first claim of it: \(alices.text)")
        try await OutboxDrain.wait(harness.pool)
        let deliveries = ClaimSupport.received(receiver, "entitlement.delivery", about: renewal)
        #expect(deliveries.map { $0["player_id"] as? String } == ["alice"], "\(deliveries)")
        #expect(
            ClaimSupport.received(receiver, "transaction.claim_conflict", about: renewal).isEmpty,
            "naming nobody is no conflict")
        await harness.service.shutdown()
    }

    /// Who comes first for a period another player showed: the store's push of it changes nothing
    /// about whose it is. Bob's claim records it known, Apple's DID_RENEW arrives, and Alice's own
    /// claim is still the first verification, delivered to her.
    @Test func aPeriodAnotherPlayerShowedThenTheStorePushedIsStillTheOwnersToClaim() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let original = "2000000000870001", renewal = "2000000000870002"
        _ = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, original, of: original), for: Self.alice)
        let bobs = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, renewal, of: original), for: Self.bob)
        #expect(Self.claimedBy(try bobs.json()) == "alice", "\(bobs.text)")
        let pushed = try await NotificationsDriveTheLedger.notify(
            harness, type: "DID_RENEW",
            transaction: ClaimSupport.subscription(renewal, original: original))
        #expect(pushed.status == 200, "\(pushed.text)")
        let alices = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, renewal, of: original), for: Self.alice)
        let answer = try alices.json()
        #expect(answer["duplicate"] as? Bool == false && answer["first_claimed_by"] is NSNull, "\(alices.text)")
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(receiver, "entitlement.delivery", about: renewal).map { $0["player_id"] as? String }
                == ["alice"])
        await harness.service.shutdown()
    }

    /// The attacker's order reversed: the first period is shown last, by someone else.
    @Test func anEarlierPeriodShownAfterTheOwnersClaimIsTheOwnersToo() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let original = "2000000000820001", renewal = "2000000000820002"
        let alices = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, renewal, of: original), for: Self.alice)
        #expect((try alices.json())["duplicate"] as? Bool == false, "\(alices.text)")
        let bobs = try await ClaimSupport.claim(
            harness.client, receipt: try Self.period(harness, original, of: original), for: Self.bob)
        let bobsAnswer = try bobs.json()
        #expect(bobsAnswer["duplicate"] as? Bool == true && Self.claimedBy(bobsAnswer) == "alice", "\(bobs.text)")
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(receiver, "entitlement.delivery", about: original).isEmpty, "nothing delivered to Bob"
        )
        await harness.service.shutdown()
    }

    /// Two players claiming two periods at once, many times: each subscription ends with one
    /// owner, and every delivery of it goes to that owner.
    @Test func racingClaimsOfTwoPeriodsLeaveOneOwner() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        let subscriptions = (0..<12).map { 2_000_000_000_830_000 + $0 * 10 }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for base in subscriptions {
                let original = String(base), renewal = String(base + 1)
                let first = try Self.period(harness, original, of: original),
                    second = try Self.period(harness, renewal, of: original)
                group.addTask { _ = try await ClaimSupport.claim(harness.client, receipt: first, for: Self.alice) }
                group.addTask { _ = try await ClaimSupport.claim(harness.client, receipt: second, for: Self.bob) }
            }
            try await group.waitForAll()
        }
        try await OutboxDrain.wait(harness.pool)
        for base in subscriptions {
            let periods = [String(base), String(base + 1)]
            let delivered = periods.flatMap { ClaimSupport.received(receiver, "entitlement.delivery", about: $0) }
                .compactMap { $0["player_id"] as? String }
            #expect(delivered.count == 1, "one period delivered, to one player, for \(base): \(delivered)")
            let claimants = try await harness.pool.query(
                """
                SELECT DISTINCT player_id FROM transactions WHERE store = 'app_store' AND transaction_id = ANY(\(periods)::text[]) AND claimed_at IS NOT NULL
                """
            ).map { try $0.decode("player_id", as: String.self) }
            #expect(
                claimants == delivered, "the ledger's claims are the delivered player's only, for \(base): \(claimants)"
            )
        }
        await harness.service.shutdown()
    }
}

/// The same rule for StoreKit 1 receipts confirmed with Apple's verifyReceipt, whose entries carry
/// no product kind, only an expiry.
@Suite struct ReceiptSubscriptionOwnership {
    static func period(_ id: String, of original: String) -> String {
        let expires = (Date().timeIntervalSince1970 + 30 * 86_400) * 1000
        return """
            [{"quantity":"1","product_id":"vip.monthly","transaction_id":"\(id)","original_transaction_id":"\(original)",
            "purchase_date_ms":"1760597486000","expires_date_ms":"\(Int64(expires))","web_order_line_item_id":"\(id)"}]
            """
    }

    @Test func aPeriodInAnotherPlayersReceiptIsTheOwners() async throws {
        let fake = try FakeVerifyReceipt()
        let receiver = try GooglePlayHarness.Receiver()
        let receiptRoot = try TestReceipts.signingPKI().root
        let hooks = "http://127.0.0.1:\(receiver.server.port)/hooks"
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(), webhookURL: hooks, deliveryURL: hooks,
            appStore: { pki in fake.appStoreConfiguration(trusting: pki, receiptRoot: receiptRoot) })
        defer { harness.stop(); ClaimSupport.stop(receiver); Task.detached { await fake.shutdown() } }
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        let original = "2000000000850001", renewal = "2000000000850002"
        fake.inApp.set(Self.period(original, of: original))
        let alices = try await ClaimSupport.claim(harness.client, receipt: receipt, for: SubscriptionOwnership.alice)
        #expect(alices.status == 200 && (try? alices.json())?["duplicate"] as? Bool == false, "\(alices.text)")
        fake.inApp.set(Self.period(renewal, of: original))
        let bobs = try await ClaimSupport.claim(harness.client, receipt: receipt, for: SubscriptionOwnership.bob)
        let answer = try bobs.json()
        #expect(bobs.status == 200 && answer["duplicate"] as? Bool == true, "\(bobs.text)")
        #expect(SubscriptionOwnership.claimedBy(answer) == "alice", "\(answer)")
        try await OutboxDrain.wait(harness.pool)
        #expect(
            ClaimSupport.received(receiver, "entitlement.delivery", about: renewal).isEmpty, "nothing delivered to Bob")
        #expect(ClaimSupport.received(receiver, "transaction.claim_conflict", about: renewal).count == 1)
        await harness.service.shutdown()
    }
}

/// The same rule for Google Play: a re-subscription's new purchase token (linked to the old one)
/// is a period of the same subscription.
@Suite struct GoogleSubscriptionOwnership {
    @Test func aLinkedPurchaseTokenShownByAnotherPlayerIsTheOwners() async throws {
        let h = try await EntitlementHarness.start()
        defer { h.stop() }
        var settings = ClientSettings()
        settings.deliveryURL = "http://127.0.0.1:\(h.receiver.server.port)/hooks"
        _ = try await h.harness.service.clients.update(h.client.clientID, settings)
        try await h.mapCatalog()
        try h.google.addSubscription(
            token: "g-first", productID: "vip_monthly", latestOrderID: "GPA.3377-0000-0000-00001..2")
        try h.google.addSubscription(
            token: "g-resubscribed", productID: "vip_monthly", latestOrderID: "GPA.3377-0000-0000-00002",
            linkedToken: "g-first")
        try await h.claimGoogle("g-first", for: "alice")
        let bobs = try await h.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "g-resubscribed", "player_id": "bob"])
        let answer = try bobs.json()
        #expect(bobs.status == 200 && answer["duplicate"] as? Bool == true, "\(bobs.text)")
        #expect(SubscriptionOwnership.claimedBy(answer) == "alice", "\(answer)")
        let alices = try await h.client.post(
            "/v1/verify", json: ["store": "google_play", "receipt": "g-resubscribed", "player_id": "alice"])
        #expect((try alices.json())["duplicate"] as? Bool == false, "the owner's own claim: \(alices.text)")
        try await OutboxDrain.wait(h.harness.pool)
        let conflicts = ClaimSupport.received(
            h.receiver, "transaction.claim_conflict", about: "GPA.3377-0000-0000-00002")
        #expect(
            conflicts.count == 1 && ClaimConflicts.isClaimant(conflicts.first?["claimed_by"], ["player_id": "bob"]),
            "\(conflicts)")
        let deliveries = ClaimSupport.received(h.receiver, "entitlement.delivery", about: "GPA.3377-0000-0000-00002")
        #expect(deliveries.map { $0["player_id"] as? String } == ["alice"], "\(deliveries)")
        #expect(try await h.owned("bob").byName.isEmpty, "Bob owns nothing")
        #expect(try await h.owned("alice").byName["vip"] != nil, "Alice owns the VIP")
        await h.harness.service.shutdown()
    }
}

/// Player ids are compared as the game's bytes, everywhere: a precomposed "é" and an "e" with a
/// combining accent are two players to the claim's answer and to the entitlement index alike.
@Suite struct PlayerIDBytes {
    @Test func lookAlikePlayerIDsAreTwoPlayersInTheAnswerAndTheIndex() async throws {
        let receiver = try GooglePlayHarness.Receiver()
        let harness = try await ClaimSupport.appStore(receiver)
        defer { harness.stop(); ClaimSupport.stop(receiver) }
        _ = try await harness.service.repositories.catalog.set(
            client: harness.client.clientID, store: "app_store", product: "noads",
            entitlements: ["no_ads"], by: "test")
        let precomposed = "Jos\u{E9}", combining = "Jose\u{301}"
        #expect(precomposed == combining, "Swift's == calls them equal; the ledger must not")
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000840001", "productId": "noads",
                "type": "Non-Consumable",
            ]))
        _ = try await ClaimSupport.claim(harness.client, receipt: receipt, for: ["player_id": precomposed])
        let second = try await ClaimSupport.claim(harness.client, receipt: receipt, for: ["player_id": combining])
        let answer = try second.json()
        #expect(answer["duplicate"] as? Bool == true, "\(answer)")
        let named = try #require(
            (answer["first_claimed_by"] as? [String: Any])?["player_id"] as? String, "a conflict: \(answer)")
        #expect(Array(named.utf8) == Array(precomposed.utf8), "naming the first claimant's own bytes")
        let owners = try await harness.pool.query("SELECT player_id FROM player_entitlements")
        #expect(
            try owners.map { Array(try $0.decode("player_id", as: String.self).utf8) } == [Array(precomposed.utf8)],
            "one owner")
        try await OutboxDrain.wait(harness.pool)
        #expect(ClaimSupport.received(receiver, "transaction.claim_conflict", about: "2000000000840001").count == 1)
        await harness.service.shutdown()
    }

    @Test func refreshingLookAlikePlayersRefreshesBoth() {
        #expect(
            LedgerRules.distinctPlayers(["Jos\u{E9}", "Jose\u{301}", "Jos\u{E9}"]).map { Array($0.utf8) }
                == [Array("Jose\u{301}".utf8), Array("Jos\u{E9}".utf8)])
        #expect(!LedgerRules.samePlayer("Jos\u{E9}", "Jose\u{301}"))
    }
}
