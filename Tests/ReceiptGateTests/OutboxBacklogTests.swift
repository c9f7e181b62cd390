import AppStore
import AppStoreTestSupport
import Foundation
import HTTPServer
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A game server's receiver that hangs while it is down (every request held open until it comes
/// back, then refused): the worst a dead receiver does to a sender. Only what arrives once it is
/// up is acknowledged.
final class HangingReceiver: Sendable {
    let server: HTTPServer
    let up = LockedBox(false)
    /// Event ids answered 200, in the order they were answered, with their type and transaction.
    let acknowledged = LockedBox<[(eventID: String, type: String, transactionID: String)]>([])
    let held = LockedBox(0)

    init() throws {
        let up = self.up, acknowledged = self.acknowledged, held = self.held
        var router = Router()
        router.post("/hooks") { request in
            if !up.get() {
                held.update { $0 += 1 }
                defer { held.update { $0 -= 1 } }
                while !up.get() { try await Task.sleep(for: .milliseconds(20)) }
                return HTTPResponse(status: 503)  // its sender gave up on it long ago
            }
            let json = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            let data = json?["data"] as? [String: Any]
            let transaction =
                (data?["transaction"] as? [String: Any])?["transaction_id"] as? String ?? data?["transaction_id"]
                as? String ?? ""
            acknowledged.update {
                $0.append((json?["event_id"] as? String ?? "", json?["type"] as? String ?? "", transaction))
            }
            return .json(["ok": true])
        }
        server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0),
            responder: router.build(
                handlerTimeout: .seconds(120),
                handlerExecutor: FakeServing.executor))
        try server.start()
    }

    var url: String { "http://127.0.0.1:\(server.port)/hooks" }
}

/// A service whose client's receiver answers 503 until a test brings it up, with three failures
/// opening it and no probe until the test moves the service's clock (`offset`) two minutes on.
struct ReceiverDownAtFirst {
    let harness: VerifyHarness
    let receiver: WebhookReceiver
    let offset: LockedBox<Double>

    /// `maxDelay`: how long what is parked waits when nothing releases it.
    static func start(maxDelay: Duration) async throws -> ReceiverDownAtFirst {
        let receiver = try WebhookReceiver()  // down: answers 503 at once
        let offset = LockedBox(0.0)
        var outbox = VerifyHarness.fastOutbox()
        outbox.circuitThreshold = 3
        outbox.probeInterval = .seconds(120)  // no probe until the test's clock says so
        outbox.maxDelay = maxDelay
        let harness = try await VerifyHarness.start(
            outbox: outbox, webhookURL: receiver.url, now: { Date().addingTimeInterval(offset.get()) })
        receiver.secret.set(harness.client.secret)
        return ReceiverDownAtFirst(harness: harness, receiver: receiver, offset: offset)
    }

    func stop() {
        harness.stop()
        let receiver = receiver
        Task.detached { await receiver.server.shutdown() }
    }
}

/// A receiver down under steady sales, then back: every message is delivered once, in order per
/// purchase, and the backlog drains; meanwhile another client's deliveries go on.
@Suite struct OutboxBacklog {
    @Test func aDeadReceiverDelaysNobodyElseAndItsBacklogDrainsInOrderOnce() async throws {
        let dead = try HangingReceiver()
        let healthy = try WebhookReceiver()
        healthy.up.set(true)
        var outbox = VerifyHarness.fastOutbox()
        outbox.attemptTimeout = .seconds(30)  // a hanging receiver holds its sender's slot this long
        outbox.circuitThreshold = 3
        let harness = try await VerifyHarness.start(outbox: outbox, webhookURL: dead.url)
        defer {
            harness.stop(); dead.up.set(true);
            Task.detached {
                await dead.server.shutdown(); await healthy.server.shutdown()
            }
        }
        var otherSettings = VerifyHarness.settings(name: "Other game", environments: [.sandbox], gameID: 7)
        otherSettings.appIdentifiers[AppStoreProvider.bundleIDKind.name] = ["com.example.other"]
        otherSettings.webhookURL = healthy.url
        let other = try await harness.service.clients.create(otherSettings)
        let otherClient = SignedClient(
            port: harness.service.port, clientID: other.client.clientID, secret: other.secret)
        healthy.secret.set(other.secret)

        // Sales for the game whose receiver is down, a refund of every third: each purchase's
        // refund must reach the game after its purchase.
        let deadIDs = (0..<40).map { String(2_000_000_000_870_000 + $0) }
        #expect(try await harness.verifyPurchases(deadIDs).allSatisfy { $0 == 200 })
        for id in deadIDs.enumerated().filter({ $0.offset % 3 == 0 }).map(\.element) {
            let refund = try await NotificationsDriveTheLedger.notify(
                harness, type: "REFUND",
                transaction: [
                    "transactionId": id, "originalTransactionId": id,
                    "revocationDate": Int64(Date().timeIntervalSince1970 * 1000),
                ])
            #expect(refund.status == 200)
        }
        try await WebhookDelivery.waitUntil { dead.held.get() > 0 }

        // The other game sells while the first one's receiver hangs: its webhooks arrive.
        let otherIDs = (0..<12).map { String(2_000_000_000_880_000 + $0) }
        for id in otherIDs {
            let receipt = try harness.pki.sign(
                AppleTestPKI.transaction([
                    "transactionId": id, "originalTransactionId": id,
                    "bundleId": "com.example.other",
                ]))
            #expect(
                try await otherClient.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200
            )
        }
        try await WebhookDelivery.waitUntil {
            Set(healthy.acknowledged.compactMap(\.transactionID)).isSuperset(of: otherIDs)
        }
        #expect(
            Set(healthy.acknowledged.compactMap(\.transactionID)).isSuperset(of: otherIDs),
            "delivered while the other receiver hangs")
        #expect(dead.acknowledged.get().isEmpty && !dead.up.get(), "and that receiver is still down")

        // Back: the backlog drains, each message once, each refund after its purchase.
        dead.up.set(true)
        let expected = try await harness.count("outbox WHERE client_id = '\(harness.client.clientID)'")
        try await WebhookDelivery.waitUntil { dead.acknowledged.get().count >= expected }
        try await WebhookDelivery.waitUntil { try await harness.count("outbox WHERE status = 'pending'") == 0 }
        let delivered = dead.acknowledged.get()
        #expect(delivered.count == expected, "every message once: \(delivered.count) of \(expected)")
        #expect(Set(delivered.map(\.eventID)).count == delivered.count, "none twice")
        for id in deadIDs {
            let types = delivered.filter { $0.transactionID == id }.map(\.type)
            #expect(types.first == "transaction.verified", "\(id): \(types)")
            if types.contains("transaction.refunded") {
                #expect(types.last == "transaction.refunded", "\(id): \(types)")
            }
        }
        #expect(try await harness.count("outbox WHERE \(VerifyHarness.sentCondition)") == expected + otherIDs.count)
        await harness.service.shutdown()
    }

    /// While a receiver that fails fast is held open, the sales that go on write their messages
    /// parked (not handed over only to be parked one by one, a statement each); its probe's success
    /// releases them, and every one is delivered once.
    @Test func anOpenReceiversNewMessagesAreWrittenParkedUntilItsProbeAnswers() async throws {
        let held = try await ReceiverDownAtFirst.start(maxDelay: .seconds(120))
        defer { held.stop() }
        let (harness, receiver, offset) = (held.harness, held.receiver, held.offset)
        let first = (0..<3).map { String(2_000_000_000_890_000 + $0) }
        #expect(try await harness.verifyPurchases(first).allSatisfy { $0 == 200 })
        // Three failures open it: what is due for it then is parked until a probe answers.
        try await WebhookDelivery.waitUntil {
            try await harness.count("outbox WHERE next_attempt_at > now() + interval '60 seconds'") > 0
        }

        let later = (0..<20).map { String(2_000_000_000_891_000 + $0) }
        #expect(try await harness.verifyPurchases(later).allSatisfy { $0 == 200 })
        let keys = later.map { "'app_store:\($0)'" }.joined(separator: ", ")
        // Written parked, as heads, by the statement that wrote them (a later park would have moved
        // `next_attempt_at` from a later `now()`; a handed message would carry a lease).
        #expect(
            try await harness.count(
                """
                outbox WHERE aggregate_key IN (\(keys)) AND status = 'pending' AND attempts = 0 AND is_head AND placed
                  AND lease_until IS NULL AND next_attempt_at = created_at + interval '120 seconds'
                """) == later.count, "written parked")
        #expect(
            receiver.deliveries.get().filter { later.contains($0.transactionID ?? "") }.isEmpty, "and none was tried")

        // Back, and its probe is due: the probe answers, and everything waiting is released.
        receiver.up.set(true)
        offset.set(121)
        try await WebhookDelivery.waitUntil { try await harness.count("outbox WHERE status = 'pending'") == 0 }
        let acknowledged = receiver.acknowledged.compactMap(\.transactionID)
        #expect(acknowledged.sorted() == (first + later).sorted(), "every purchase's webhook once")
    }

    /// Two messages about one purchase, queued directly as e-mails: with no SMTP server configured
    /// the service's own worker never claims one, so the test's claims are the only ones.
    static func queueTwo(_ harness: VerifyHarness, key: String) async throws {
        for type in ["first", "second"] {
            try await harness.pool.withTransaction { connection in
                try OutboxRepository.enqueue(
                    OutboxMessage(
                        clientID: harness.client.clientID, target: .email, type: type, aggregateKey: key,
                        body: Data("{}".utf8)), sealingMailWith: harness.service.repositories.outbox.secrets,
                    on: connection)
            }
        }
    }

    /// A sender whose lease ran out and whose message another sender took over changes nothing
    /// when it finally reports: the message is not put back, and the next one is not held up.
    @Test func aSenderPastItsLeaseCannotPutItsMessageBack() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox
        try await Self.queueTwo(harness, key: "app_store:lease")
        let slow = try #require(
            try await outbox.claim(targets: [.email], limit: 10, lease: 0).first { $0.type == "first" })
        let taken = try #require(
            try await outbox.claim(targets: [.email], limit: 10, lease: 600).first, "the lease ran out: claimed again")
        #expect(taken.id == slow.id && taken.lease != slow.lease)
        try await outbox.markDelivered(taken)
        try await outbox.markFailed(slow, attempts: 1, error: "timed out", dead: false, retryInSeconds: 0)
        let rows = try await harness.pool.query(
            "SELECT event_type, status, is_head FROM outbox WHERE aggregate_key = 'app_store:lease' ORDER BY id")
        #expect(
            try rows.map { try $0.decode("status", as: String.self) } == ["delivered", "pending"],
            "the late failure put nothing back")
        #expect(
            try rows.map { try $0.decode("is_head", as: Bool.self) } == [false, true],
            "the next message is first in line")
        let next = try await outbox.claim(targets: [.email], limit: 10, lease: 600)
        #expect(next.map(\.type) == ["second"])
    }

    /// A pass of healing reads the backlog a page at a time: each page's headless aggregates are
    /// reseated, and the pass goes on from where the page ended until it reaches the end.
    @Test func healingGoesThroughTheBacklogAPageAtATime() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox
        // Five aggregates of two pending messages each, none with a head (as an older process left them).
        try await harness.pool.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, payload, target, placed, is_head, next_attempt_at)
            SELECT gen_random_uuid(), \(harness.client.clientID), 'old.paged', 'app_store:paged-' || a, '{}'::jsonb, 'email',
                   true, false, now() + interval '1 hour'
            FROM generate_series(1, 5) a, generate_series(1, 2) m
            """)
        var position: OutboxHeads.Position?
        var pages = 0
        repeat {
            position = try await outbox.healHeads(after: position, pageSize: 4).next
            pages += 1
        } while position != nil && pages < 10
        #expect(pages >= 3, "ten messages in pages of four")
        #expect(try await harness.count("outbox WHERE event_type = 'old.paged' AND is_head") == 5, "one head each")
    }

    /// Messages written or moved by a process of the version before the heads (a rolling upgrade)
    /// are given a head by the upkeep, never stranded.
    @Test func anAggregateLeftWithoutAHeadIsHealed() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let outbox = harness.service.repositories.outbox
        try await harness.pool.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, payload, target, placed, is_head)
            VALUES (gen_random_uuid(), \(harness.client.clientID), 'old.process', 'app_store:old', '{}'::jsonb, 'email', true, false)
            """)
        // The service's own upkeep may heal it first (it runs at start): either way it gets its head.
        _ = try await outbox.healHeads(after: nil)
        #expect(try await harness.count("outbox WHERE event_type = 'old.process' AND is_head") == 1)
        #expect(try await outbox.claim(targets: [.email], limit: 10, lease: 600).map(\.type) == ["old.process"])
    }
}
