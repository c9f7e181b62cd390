import Crypto
import Foundation
import HTTPServer
import ReceiptCore
@testable import ReceiptGate
import Testing
import AppStoreTestSupport
import TestSupport

/// A game server's webhook endpoint on loopback that can be down (503) for a while.
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        let eventID: String, type: String, transactionID: String?, signatureValid: Bool, acknowledged: Bool
    }

    let server: HTTPServer
    let up = LockedBox(false)
    let deliveries = LockedBox<[Delivery]>([])
    let secret = LockedBox("")

    init() throws {
        let up = self.up, deliveries = self.deliveries, secret = self.secret
        var router = Router()
        router.post("/hooks/receiptgate") { request in
            // Checked the way the seed tells game servers to check: HMAC over "{id}.{ts}.{sha256(body)}", 300 s window.
            let clientID = request.headers["X-Client-ID"] ?? "", timestamp = request.headers["X-Timestamp"] ?? ""
            let expected = Hex.encode(HMACSHA256.authenticationCode(key: Data(secret.get().utf8),
                                                                    message: Data("\(clientID).\(timestamp).\(SHA256.hex(request.body))".utf8)))
            let fresh = abs(Date().timeIntervalSince1970 - (Double(timestamp) ?? 0)) <= 300
            let json = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            let transaction = ((json?["data"] as? [String: Any])?["transaction"] as? [String: Any])?["transaction_id"] as? String
            let isUp = up.get()
            deliveries.update { $0.append(Delivery(eventID: json?["event_id"] as? String ?? "", type: json?["type"] as? String ?? "",
                                                   transactionID: transaction, signatureValid: fresh && expected == request.headers["X-Signature"],
                                                   acknowledged: isUp)) }
            return isUp ? .json(["ok": true]) : HTTPResponse(status: 503)
        }
        server = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), responder: router.build())
        try server.start()
    }

    var url: String { "http://127.0.0.1:\(server.port)/hooks/receiptgate" }
    var acknowledged: [Delivery] { deliveries.get().filter(\.acknowledged) }
}

@Suite struct WebhookDelivery {
    /// Waits up to 20 s for `condition`; not meeting it is a failure of its own.
    static func waitUntil(_ condition: () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        for _ in 0..<400 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the condition did not hold within 20 s", sourceLocation: sourceLocation)
    }

    @Test func everyEventArrivesInOrderAfterAnOutageNoneLost() async throws {
        let receiver = try WebhookReceiver()
        let token = String(repeating: "a", count: 32)
        let harness = try await VerifyHarness.start(outbox: VerifyHarness.fastOutbox(), adminToken: token, webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)

        let ids = ["2000000000005001", "2000000000005002", "2000000000005003"]
        for id in ids {
            let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id]))
            #expect(try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        }
        #expect(try await NotificationsDriveTheLedger.notify(harness, type: "REFUND",
                    transaction: ["transactionId": ids[1], "originalTransactionId": ids[1], "revocationDate": Int64(Date().timeIntervalSince1970 * 1000)]).status == 200)

        // Down: attempts pile up, nothing is acknowledged, the operator sees the failures.
        try await Self.waitUntil { receiver.deliveries.get().count >= 8 }
        #expect(receiver.acknowledged.isEmpty)
        let failing = try await harness.service.repositories.outbox.list(failedOnly: true)
        #expect(failing.count >= 3)
        // The refund waits behind its purchase: never delivered (or even tried) first.
        let tried = receiver.deliveries.get()
        if let refund = tried.firstIndex(where: { $0.type == "transaction.refunded" }) {
            #expect(tried[..<refund].contains { $0.type == "transaction.verified" && $0.transactionID == ids[1] })
        }

        receiver.up.set(true)
        try await Self.waitUntil { receiver.acknowledged.count >= 4 }
        let acknowledged = receiver.acknowledged
        #expect(acknowledged.count == 4)
        #expect(Set(acknowledged.map(\.eventID)).count == 4)
        #expect(acknowledged.allSatisfy { $0.signatureValid })
        #expect(receiver.deliveries.get().allSatisfy { $0.signatureValid })
        // The same event id on every attempt of an event.
        let outboxIDs = try await harness.pool.query("SELECT event_id::text AS id FROM outbox").map { try $0.decode("id", as: String.self) }
        #expect(Set(receiver.deliveries.get().map(\.eventID)) == Set(outboxIDs))
        // In order per transaction.
        let second = acknowledged.filter { $0.transactionID == ids[1] }.map(\.type)
        #expect(second == ["transaction.verified", "transaction.refunded"])
        // The receiver answers before the worker records the delivery: wait for the record.
        try await Self.waitUntil {
            try await harness.pool.query("SELECT count(*) AS n FROM outbox WHERE status <> 'delivered'")[0].decode("n", as: Int.self) == 0
        }

        // An operator can send one again, through the admin API; it keeps its id.
        let again = try #require(acknowledged.first?.eventID)
        let unauthorized = try await RawHTTP.request(port: harness.client.port, method: "POST", path: "/admin/webhooks/\(again)/redeliver")
        #expect(unauthorized.status == 401)
        let queued = try await RawHTTP.request(port: harness.client.port, method: "POST", path: "/admin/webhooks/\(again)/redeliver",
                                               headers: ["Authorization": "Bearer \(token)"])
        #expect(queued.status == 200)
        try await Self.waitUntil { receiver.acknowledged.filter { $0.eventID == again }.count == 2 }
        #expect(receiver.acknowledged.filter { $0.eventID == again }.count == 2)
        let listed = try await RawHTTP.request(port: harness.client.port, path: "/admin/webhooks", headers: ["Authorization": "Bearer \(token)"])
        #expect((try listed.json()["events"] as? [[String: Any]])?.count == 4)
        await harness.service.shutdown()
        await receiver.server.shutdown()
    }

    @Test func eventsThatNeverGetThroughStayVisibleAsDeadAndCanBeRedelivered() async throws {
        let receiver = try WebhookReceiver()
        let harness = try await VerifyHarness.start(outbox: VerifyHarness.fastOutbox(giveUpAfter: .seconds(1)), webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let receipt = try harness.pki.sign(AppleTestPKI.transaction())
        #expect(try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        try await Self.waitUntil {
            try await harness.pool.query("SELECT status FROM outbox")[0].decode("status", as: String.self) == "dead"
        }
        let dead = try await harness.service.repositories.outbox.list(failedOnly: true)
        #expect(dead.count == 1)

        receiver.up.set(true)
        let eventID = try await harness.pool.query("SELECT event_id::text AS id FROM outbox")[0].decode("id", as: String.self)
        #expect(try await harness.service.repositories.outbox.redeliver(eventID: eventID))
        try await Self.waitUntil { !receiver.acknowledged.isEmpty }
        #expect(receiver.acknowledged.map(\.eventID) == [eventID])
        #expect(try await harness.service.repositories.outbox.redeliver(eventID: UUID().uuidString) == false)
        await harness.service.shutdown()
        await receiver.server.shutdown()
    }

    @Test func backoffGrowsWithJitterAndIsCapped() {
        for attempts in 1...12 {
            let step = min(Duration.seconds(10) * (1 << (attempts - 1)), .seconds(3600))
            let delay = OutboxWorker.delay(afterAttempts: attempts, base: .seconds(10), max: .seconds(3600))
            #expect(delay >= step / 2 && delay <= step)
        }
    }
}
