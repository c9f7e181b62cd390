import Foundation
import Postgres
import Testing

@testable import ReceiptGate

/// A new purchase's webhook is *handed*: written in the group commit already delivered, sent from
/// memory, and in flight until its sender settles it. A success writes nothing more; anything
/// else puts it back in the pending state, and a sender that stopped has it taken back.
@Suite("HandedDelivery", .serialized)
struct HandedDelivery {
    static func message(_ key: String, client: String) throws -> OutboxRepository.Queued {
        try OutboxHandoffRules.message(key, client: client)
    }

    /// `key`'s message written handed, as a verification's group commit writes a new purchase's.
    static func handed(
        _ key: String, _ harness: VerifyHarness, lease: Int = 600
    ) async throws -> [OutboxRepository.Claimed] {
        let message = try Self.message(key, client: harness.client.clientID)
        return try await harness.pool.withTransaction { connection in
            try OutboxRepository.insert([message], claiming: [true], lease: lease, on: connection)
        }
    }

    /// `key`'s message written the ordinary way, as a store's notification or a refund writes one.
    static func written(_ key: String, _ harness: VerifyHarness) async throws {
        let message = try Self.message(key, client: harness.client.clientID)
        try await harness.pool.withTransaction { try OutboxRepository.insert([message], on: $0) }
    }

    /// The row a purchase's webhook is written as is the only version of it: delivered, nothing
    /// rewrote it (its `xmin` is still that of the commit that wrote its body beside it), though
    /// the receiver answered and the worker vouched for it (no longer in flight).
    @Test func aHandedWebhooksSuccessWritesNothingMore() async throws {
        let receiver = try WebhookReceiver()
        let harness = try await WebhookDelivery.onePurchaseDelivered(to: receiver)
        defer { harness.stop() }
        #expect(
            try await harness.count(
                "outbox o JOIN outbox_bodies b ON b.id = o.id WHERE o.xmin = b.xmin AND o.status = 'delivered' AND o.attempts = 1"
            ) == 1, "one row version, written delivered")
        await harness.service.shutdown()
        await receiver.server.shutdown()
    }

    /// Until its sender settles it, a handed message is what an operator sees as pending: in the
    /// list, in the backlog's count and age. Settled, it is delivered.
    @Test func aHandedMessageInFlightIsShownAndCountedAsPending() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox, queries = OperatorQueries(pool: harness.pool)
        let handed = try await Self.handed("app_store:shown", harness)
        let batch = try #require(handed.first?.handedIn)
        var listed = try #require(try await outbox.list(failedOnly: false).first)
        #expect(listed.status == "pending" && listed.deliveredAt == nil && listed.attempts == 0 && !listed.hasFailed)
        var backlog = try await queries.backlog()
        #expect(backlog.pending == 1 && backlog.oldestPending != nil && backlog.failed == 0)
        #expect(try await queries.deliveries(status: "pending", clientID: nil, type: nil).count == 1)
        #expect(try await queries.deliveries(status: "failed", clientID: nil, type: nil).isEmpty)
        // Being sent: an operator's redelivery leaves it to its sender, and retention keeps it.
        #expect(try await outbox.redeliver(eventID: try #require(handed.first?.eventID)))
        #expect(try await harness.count("outbox WHERE \(OutboxRepository.inFlight)") == 1)
        let retention = Retention(
            pool: harness.pool, settings: Retention.Settings(attemptsDays: 1, outboxDays: 1, notificationsDays: 1))
        _ = try await retention.sweep(now: Date().addingTimeInterval(10 * 86_400))
        #expect(try await harness.count("outbox WHERE \(OutboxRepository.inFlight)") == 1)
        try await outbox.vouch(forBatches: [batch])
        listed = try #require(try await outbox.list(failedOnly: false).first)
        #expect(listed.status == "delivered" && listed.deliveredAt != nil)
        backlog = try await queries.backlog()
        #expect(backlog.pending == 0 && backlog.oldestPending == nil)
    }

    /// A handed message given back unsent (its receiver held open, or it waited too long for a
    /// slot) is pending again as if never attempted: its aggregate's head, due, attempts 0.
    @Test func aHandedMessageGivenBackIsPendingAsIfNeverTried() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox
        let handed = try await Self.handed("app_store:given-back", harness)
        try await outbox.release(handed)
        #expect(
            try await harness.count(
                "outbox WHERE status = 'pending' AND is_head AND placed AND attempts = 0 AND delivered_at IS NULL AND handed_in IS NULL AND lease_until IS NULL"
            ) == 1)
        let claimed = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(claimed.map(\.eventID) == handed.map(\.eventID))
        #expect(claimed.first?.attempts == 0)
    }

    /// A handed message that failed is its aggregate's head, pending, with its attempt counted;
    /// a later message of its aggregate, written while it was in flight, follows it.
    @Test func aHandedMessageThatFailedIsSentBeforeWhatWasWrittenBehindIt() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox
        let handed = try await Self.handed("app_store:failed", harness)
        try await Self.written("app_store:failed", harness)
        _ = try await outbox.placeNew()
        #expect(try await outbox.claim(targets: [.email], limit: 10, lease: 60).isEmpty, "the later one waits")
        try await outbox.markFailed(
            try #require(handed.first), attempts: 1, error: "503", dead: false, retryInSeconds: 0)
        #expect(
            try await harness.count(
                "outbox WHERE status = 'pending' AND is_head AND attempts = 1 AND delivered_at IS NULL AND handed_in IS NULL"
            ) == 1)
        let first = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(first.map(\.eventID) == handed.map(\.eventID) && first.first?.attempts == 1)
        try await outbox.markDelivered(first)
        let second = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(second.count == 1 && second.first?.eventID != handed.first?.eventID)
    }

    /// An operator redelivers an older message of an aggregate while a newer one is in flight:
    /// it waits, unplaced, until the one in flight is settled, so the two are never under way at
    /// once.
    @Test func aMessageRedeliveredBehindOneInFlightWaitsForIt() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox
        try await Self.written("app_store:again", harness)
        let older = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        try await outbox.markDelivered(older)
        let handed = try await Self.handed("app_store:again", harness)
        #expect(handed.count == 1, "nothing of its aggregate pending: handed")
        #expect(try await outbox.redeliver(eventID: try #require(older.first?.eventID)))
        #expect(try await outbox.claim(targets: [.email], limit: 10, lease: 60).isEmpty, "it waits")
        try await outbox.vouch(forBatches: [try #require(handed.first?.handedIn)])
        #expect(try await outbox.claim(targets: [.email], limit: 10, lease: 60).map(\.eventID) == older.map(\.eventID))
    }

    /// One batch a client: what one client's receiver keeps in flight holds none of another's.
    @Test func eachClientsHandedMessagesAreABatchOfTheirOwn() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let handed = try await harness.pool.withTransaction { connection in
            try OutboxRepository.insert(
                [
                    try Self.message("app_store:a1", client: "a"), try Self.message("app_store:b1", client: "b"),
                    try Self.message("app_store:a2", client: "a"),
                ], claiming: [true, true, true], lease: 600, on: connection)
        }
        let batches = Dictionary(grouping: handed, by: \.clientID).mapValues { Set($0.map(\.handedIn)) }
        #expect(batches["a"]?.count == 1 && batches["b"]?.count == 1 && batches["a"] != batches["b"])
        #expect(try await harness.count("outbox_handed") == 2)
    }

    /// The worker's count of what is settled: a batch is vouched for once every message of it
    /// is settled, given back when its statement failed, and forgotten once its lease ran out.
    @Test func aBatchIsVouchableOnceEveryMessageOfItIsSettled() {
        let handoff = OutboxHandoff(capacity: 8, leaseSeconds: 60)
        func handed(_ id: Int64, batch: Int64) -> OutboxRepository.Claimed {
            var event = OutboxHandoffRules.claimed(id, client: "a")
            event.handedIn = batch
            return event
        }
        let written = ContinuousClock.now
        handoff.hand([handed(1, batch: 1), handed(2, batch: 1), handed(3, batch: 3)], reserved: 0, written: written)
        handoff.settled([handed(1, batch: 1)])
        #expect(handoff.takeVouchable(now: written).isEmpty, "one of batch 1 is still unsettled")
        handoff.settled([handed(2, batch: 1), OutboxHandoffRules.claimed(9, client: "a")])
        #expect(handoff.takeVouchable(now: written) == [1])
        handoff.vouchLater([1])
        #expect(handoff.takeVouchable(now: written) == [1], "given back when its statement failed")
        // Batch 3 was never settled: once its lease has run out, any worker takes it back.
        #expect(handoff.takeVouchable(now: written + .seconds(61)).isEmpty)
        handoff.settled([handed(3, batch: 3)])
        #expect(handoff.takeVouchable(now: written + .seconds(61)).isEmpty, "forgotten, never vouched for")
    }

    /// What a verification hands after the worker stopped is returned, to be given back.
    @Test func whatIsHandedAfterTheWorkerStoppedIsReturned() {
        let handoff = OutboxHandoff(capacity: 8, leaseSeconds: 60)
        _ = handoff.close()
        let late = OutboxHandoffRules.claimed(1, client: "a")
        #expect(handoff.hand([late], reserved: 0).map(\.id) == [1])
        #expect(!handoff.holds("a"))
    }

    /// The sender stopped with a message in flight and a later one of its aggregate written
    /// behind it: once the lease runs out, the worker takes the first back, and it is sent
    /// before the later one, which waits for it.
    @Test func whatAStoppedSenderHeldInFlightIsSentAgainBeforeWhatFollowsIt() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox
        let handed = try await Self.handed("app_store:stopped", harness, lease: 1)
        try await Self.written("app_store:stopped", harness)
        // Nothing settles it: the harness's worker takes it back once its lease has run out.
        var first: [OutboxRepository.Claimed] = []
        try await WebhookDelivery.waitUntil {
            first = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
            return !first.isEmpty
        }
        #expect(first.map(\.eventID) == handed.map(\.eventID), "the one in flight first")
        #expect(try await harness.count("outbox_handed") == 0)
        #expect(try await outbox.claim(targets: [.email], limit: 10, lease: 60).isEmpty, "the later one waits")
        try await outbox.markDelivered(first)
        let second = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(second.count == 1 && second.first?.eventID != handed.first?.eventID)
    }
}
