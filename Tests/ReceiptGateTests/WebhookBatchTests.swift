import AppStoreTestSupport
import Foundation
import HTTPServer
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A game server's receiver for batched webhooks on loopback: checks each POST as the contract
/// tells game servers to, records its events, and can be down (503).
final class BatchReceiver: Sendable {
    struct Event: Sendable {
        let eventID: String, type: String, transactionID: String
        /// The envelope's keys, sorted.
        let keys: [String]

        init(_ json: [String: Any]) {
            eventID = json["event_id"] as? String ?? ""
            type = json["type"] as? String ?? ""
            transactionID =
                ((json["data"] as? [String: Any])?["transaction"] as? [String: Any])?["transaction_id"] as? String ?? ""
            keys = json.keys.sorted()
        }
    }

    struct Post: Sendable {
        let events: [Event]
        let countHeader: String?, eventIDHeader: String?
        let signatureValid: Bool, acknowledged: Bool
        var eventIDs: [String] { events.map(\.eventID) }
        var types: [String] { events.map(\.type) }
        var transactionIDs: [String] { events.map(\.transactionID) }
    }

    let server: HTTPServer
    let up = LockedBox(true)
    let posts = LockedBox<[Post]>([])
    let secret = LockedBox("")

    init() throws {
        let up = self.up, posts = self.posts, secret = self.secret
        var router = Router()
        router.post("/hooks") { request in
            let signatureValid = try WebhookReceiver.isSigned(request, with: secret.get())
            let json = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            let isUp = up.get()
            posts.update {
                $0.append(
                    Post(
                        events: (json?["events"] as? [[String: Any]] ?? []).map(Event.init),
                        countHeader: request.headers["X-Event-Count"],
                        eventIDHeader: request.headers["X-Event-Id"],
                        signatureValid: signatureValid, acknowledged: isUp))
            }
            return isUp ? .json(["ok": true]) : HTTPResponse(status: 503)
        }
        server = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0),
            responder: router.build(handlerExecutor: FakeServing.executor))
        try server.start()
    }

    var url: String { "http://127.0.0.1:\(server.port)/hooks" }
    var acknowledged: [Post] { posts.get().filter(\.acknowledged) }
}

@Suite struct WebhookBatches {
    /// A service whose client posts its webhooks to `receiver` (down at first), batched up to
    /// `size` events a POST.
    static func start(sendingTo receiver: BatchReceiver, batch size: Int) async throws -> VerifyHarness {
        receiver.up.set(false)
        let harness = try await VerifyHarness.start(outbox: VerifyHarness.fastOutbox(), webhookURL: receiver.url)
        receiver.secret.set(harness.client.secret)
        var settings = ClientSettings()
        settings.settings[Client.webhookBatchSetting] = [String(size)]
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
        return harness
    }

    static func delivered(_ harness: VerifyHarness) async throws -> Int {
        try await harness.count("outbox WHERE \(VerifyHarness.sentCondition)")
    }

    /// A receiver down for a while, then back: what waited for it is due at once and goes in as
    /// few POSTs as the batch size allows, `{"events": [...]}`, each event the envelope an
    /// unbatched client gets, signed once over the whole body, with `X-Event-Count`; a POST of one
    /// event (the probe) is batched too, so a receiver sees one format.
    @Test func whatWaitedGoesSeveralToAPostUpToTheBatchSizeEachAsItsOwnEnvelope() async throws {
        let receiver = try BatchReceiver()
        let harness = try await Self.start(sendingTo: receiver, batch: 3)
        defer { harness.stop() }

        let ids = (1...6).map { "200000000000600\($0)" }
        #expect(try await harness.verifyPurchases(ids) == [200, 200, 200, 200, 200, 200])
        // Failures in a row open the receiver's circuit: its messages wait together for a probe,
        // and the probe's success makes them all due at once.
        try await WebhookDelivery.waitUntil {
            harness.log.captured.contains { $0.contains("receiver keeps failing") }
        }
        receiver.up.set(true)
        try await WebhookDelivery.waitUntil { try await Self.delivered(harness) == 6 }

        let posts = receiver.acknowledged
        #expect(posts.allSatisfy { (1...3).contains($0.events.count) }, "\(posts.map(\.events.count))")
        #expect(posts.contains { $0.events.count == 3 }, "what waited shares POSTs: \(posts.map(\.events.count))")
        #expect(receiver.posts.get().allSatisfy { $0.signatureValid && $0.countHeader == String($0.events.count) })
        #expect(receiver.posts.get().allSatisfy { $0.eventIDHeader == nil }, "event ids are in the envelopes")
        #expect(posts.flatMap(\.types).allSatisfy { $0 == "transaction.verified" })
        #expect(posts.flatMap(\.events).allSatisfy { $0.keys == ["data", "event_id", "type"] })
        #expect(posts.flatMap(\.transactionIDs).sorted() == ids)
        let stored = try await harness.pool.query("SELECT event_id::text AS id FROM outbox").map {
            try $0.decode("id", as: String.self)
        }
        #expect(posts.flatMap(\.eventIDs).sorted() == stored.sorted(), "each event acknowledged once")

        // Each POST gave back a slot for every event it carried: a second outage's backlog drains
        // as the first's did (slots kept would leave the client at its share, its backlog stuck).
        receiver.up.set(false)
        let more = (1...5).map { "200000000000601\($0)" }
        #expect(try await harness.verifyPurchases(more) == more.map { _ in 200 })
        try await WebhookDelivery.waitUntil {
            harness.log.captured.count { $0.contains("receiver keeps failing") } >= 2
        }
        receiver.up.set(true)
        try await WebhookDelivery.waitUntil { try await Self.delivered(harness) == 11 }
    }

    /// A POST refused is tried again whole, each event keeping its id; a purchase's refund never
    /// rides in the POST of its purchase, and arrives after it; once the receiver answers, every
    /// event is acknowledged once.
    @Test func aRefusedBatchIsRetriedEveryEventOnceAcknowledgedInOrderPerPurchase() async throws {
        let receiver = try BatchReceiver()
        let harness = try await Self.start(sendingTo: receiver, batch: 50)
        defer { harness.stop() }

        let ids = ["2000000000006101", "2000000000006102", "2000000000006103"]
        try await WebhookDelivery.purchases(ids, thenARefundOfTheSecond: harness)
        try await WebhookDelivery.waitUntil { receiver.posts.get().count >= 2 }
        #expect(receiver.acknowledged.isEmpty)
        // Each event of a refused POST is recorded failed, to be tried again.
        let refused = try #require(receiver.posts.get().first)
        try await WebhookDelivery.waitUntil {
            try await harness.pool.query(
                """
                SELECT count(*) AS n FROM outbox
                WHERE event_id = ANY(\(refused.eventIDs)::uuid[]) AND attempts > 0 AND last_error = 'HTTP 503'
                """
            )[0].decode("n", as: Int.self) == refused.events.count
        }

        receiver.up.set(true)
        try await WebhookDelivery.waitUntil { try await Self.delivered(harness) == 4 }
        let acknowledged = receiver.acknowledged
        let events = acknowledged.flatMap { post in zip(post.eventIDs, zip(post.types, post.transactionIDs)).map { $0 }
        }
        #expect(events.count == 4 && Set(events.map(\.0)).count == 4, "every event acknowledged once")
        #expect(acknowledged.allSatisfy { $0.signatureValid })
        #expect(
            events.filter { $0.1.1 == ids[1] }.map(\.1.0) == ["transaction.verified", "transaction.refunded"],
            "the refund after its purchase")
        #expect(
            acknowledged.allSatisfy { Set($0.transactionIDs).count == $0.events.count },
            "a POST carries one event of a purchase at most")
        // Tried again with the ids they were first sent with.
        let tried = Set(receiver.posts.get().filter { !$0.acknowledged }.flatMap(\.eventIDs))
        #expect(tried.isSubset(of: Set(events.map(\.0))))
    }

    /// How one turn of the worker groups what it starts: a batching client's webhooks fill a POST
    /// up to its size, then the next; its other messages, and every message of a client that does
    /// not batch, go alone.
    @Test func aTurnGroupsABatchingClientsWebhooksUpToItsSizeAndNothingElse() {
        func event(_ id: Int64, _ client: String, _ target: OutboxTarget = .webhook) -> OutboxRepository.Claimed {
            OutboxRepository.Claimed(
                id: id, eventID: "e\(id)", clientID: client, aggregateKey: "k\(id)", type: "t", payload: "{}",
                attempts: 0, createdAt: Date(), target: target, lease: "")
        }
        let sends = OutboxSends(
            [
                event(1, "batching"), event(2, "single"), event(3, "batching"), event(4, "batching", .delivery),
                event(5, "batching"), event(6, "single"),
            ], batches: ["batching": 2, "single": 1])
        #expect(sends.all.map { $0.events.map(\.id) } == [[1, 3], [2], [4], [5], [6]])
        #expect(sends.all.map(\.batched) == [true, false, false, true, false])
    }

    /// `--webhook-batch`: a whole number from 1 to 100; 1 or empty is the default, one event a POST.
    @Test func theBatchSettingIsAWholeNumberUpToAHundred() throws {
        let input = ClientSettingsInput(identifierKinds: [], pluginSettings: [], refundCallbackFormats: [])
        for bad in ["0", "101", "ten", "-3", "2.5"] {
            #expect(throws: InvalidClientSetting.self) { _ = try input.settings(["webhook-batch": [bad]]) }
        }
        #expect(try input.settings(["webhook-batch": ["25"]]).settings[Client.webhookBatchSetting] == .some(["25"]))
        #expect(try input.settings(["webhook-batch": ["+025"]]).settings[Client.webhookBatchSetting] == .some(["25"]))
        for cleared in ["1", ""] {
            #expect(try input.settings(["webhook-batch": [cleared]]).settings[Client.webhookBatchSetting] == .some(nil))
        }
    }
}
