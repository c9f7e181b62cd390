import AppStore
import AppStoreTestSupport
import Foundation
import HTTPClient
import HTTPServer
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A game server's webhook endpoint on loopback that can be down (503) for a while.
final class WebhookReceiver: Sendable {
    struct Delivery: Sendable {
        let eventID: String, type: String, transactionID: String?, signatureValid: Bool, acknowledged: Bool
        /// The body as it arrived.
        var body = Data()

        /// The `data.transaction` object of the body.
        var transaction: [String: Any]? {
            (((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["data"] as? [String: Any])?[
                "transaction"] as? [String: Any]
        }
    }

    let server: HTTPServer
    let up = LockedBox(false)
    let deliveries = LockedBox<[Delivery]>([])
    let secret = LockedBox("")
    /// The loopback address it listens on (`::1` for an IPv6 receiver).
    let host: String

    init(host: String = "127.0.0.1") throws {
        self.host = host
        let up = self.up, deliveries = self.deliveries, secret = self.secret
        var router = Router()
        router.post("/hooks/receiptgate") { request in
            let signatureValid = try Self.isSigned(request, with: secret.get())
            let json = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            let transaction =
                ((json?["data"] as? [String: Any])?["transaction"] as? [String: Any])?["transaction_id"] as? String
            let isUp = up.get()
            deliveries.update {
                $0.append(
                    Delivery(
                        eventID: json?["event_id"] as? String ?? "", type: json?["type"] as? String ?? "",
                        transactionID: transaction, signatureValid: signatureValid,
                        acknowledged: isUp, body: request.body))
            }
            return isUp ? .json(["ok": true]) : HTTPResponse(status: 503)
        }
        server = HTTPServer(
            configuration: .init(host: host, port: 0), responder: router.build(handlerExecutor: FakeServing.executor))
        try server.start()
    }

    /// Checked the way the webhook contract tells game servers to check: an HMAC with the client
    /// secret over "{client id}.{timestamp}.{sha256(body)}", the timestamp within 300 s.
    static func isSigned(_ request: HTTPRequest, with secret: String) throws -> Bool {
        let clientID = request.headers["X-Client-ID"] ?? "", timestamp = request.headers["X-Timestamp"] ?? ""
        let expected = Hex.encode(
            try HMACSHA256.authenticationCode(
                key: Data(secret.utf8),
                message: Data("\(clientID).\(timestamp).\(try SHA256.hex(request.body))".utf8)))
        return abs(Date().timeIntervalSince1970 - (Double(timestamp) ?? 0)) <= 300
            && expected == request.headers["X-Signature"]
    }

    var url: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(server.port)/hooks/receiptgate" }
    var acknowledged: [Delivery] { deliveries.get().filter(\.acknowledged) }
}

@Suite struct WebhookDelivery {
    /// Waits up to 20 s for `condition`; not meeting it is a failure of its own.
    static func waitUntil(
        _ condition: () async throws -> Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        for _ in 0..<400 {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("the condition did not hold within 20 s", sourceLocation: sourceLocation)
    }

    /// A webhook tried again carries the bytes its first attempt carried (the body is kept as the
    /// text that was signed and sent, not as Postgres's rewriting of it), each attempt signed.
    @Test func aRetriedWebhookCarriesTheBytesOfItsFirstAttempt() async throws {
        let receiver = try WebhookReceiver()
        let harness = try await VerifyHarness.start(outbox: VerifyHarness.fastOutbox(), webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000000005101", "originalTransactionId": "2000000000005101"])
        )
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        try await Self.waitUntil { !receiver.deliveries.get().isEmpty }
        receiver.up.set(true)  // the first attempt was refused; the next is taken
        try await Self.waitUntil { !receiver.acknowledged.isEmpty }
        let attempts = receiver.deliveries.get().filter { $0.type == "transaction.verified" }
        #expect(attempts.count >= 2 && attempts.allSatisfy(\.signatureValid))
        #expect(Set(attempts.map(\.body)).count == 1, "every attempt the same bytes")
        // As written: compact, where Postgres's jsonb text puts a space after every colon and comma.
        #expect(!String(decoding: attempts[0].body, as: UTF8.self).contains(#"": "#))
    }

    /// A receiver's answer frees its sender's slot; the delivered mark follows in the next group
    /// commit. A mark that waits on the database (here, on a lock of its row) holds no slot, so a
    /// client's deliveries keep pace with its purchases instead of with the commits.
    @Test func aDeliveredMarkWaitingOnTheDatabaseLeavesItsClientsSlotFree() async throws {
        // Refuses each purchase's first attempt: the retry is claimed from the database, and a
        // claimed message's success is recorded by a delivered mark (a handed one needs none).
        // Then answers 200, the first once the test opens the gate.
        let gate = Latch(), answered = LockedBox<[String]>([]), refused = LockedBox<Set<String>>([])
        let atGate = LockedBox(false)
        var router = Router()
        router.post("/hooks") { request in
            let json = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            let id = ((json?["data"] as? [String: Any])?["transaction"] as? [String: Any])?["transaction_id"] as? String
            if refused.update({ $0.insert(id ?? "").inserted }) { return HTTPResponse(status: 503) }
            if answered.get().isEmpty {
                atGate.set(true)
                await gate.wait()
            }
            answered.update { $0.append(id ?? "") }
            return .json(["ok": true])
        }
        let receiver = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0),
            responder: router.build(handlerExecutor: FakeServing.executor))
        try receiver.start()
        var outbox = VerifyHarness.fastOutbox()
        outbox.maxInFlight = 2
        outbox.perClient = 1  // one message of the client under way at a time
        let harness = try await VerifyHarness.start(
            outbox: outbox, webhookURL: "http://127.0.0.1:\(receiver.port)/hooks")
        defer { harness.stop() }
        func buy(_ id: String) async throws {
            let receipt = try harness.pki.sign(
                AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id]))
            #expect(
                try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status
                    == 200)
        }
        let first = "2000000000005201", second = "2000000000005202"
        try await buy(first)
        // While the receiver holds the first webhook's retry, its row is locked: its mark will wait.
        #expect(await eventually { atGate.get() })
        let locked = LockedBox(false), release = DispatchSemaphore(value: 0)
        let holder = Task {
            try await harness.pool.withTransaction { connection in
                _ = try connection.query(
                    "SELECT id FROM outbox WHERE aggregate_key = \("app_store:\(first)") AND target = 'webhook' FOR UPDATE"
                )
                locked.set(true)
                release.wait()  // a thread of the pool's own, not the cooperative pool's
            }
        }
        defer { release.signal() }
        #expect(await eventually { locked.get() })
        await gate.open()
        try await Self.waitUntil { answered.get() == [first] }
        try await buy(second)
        try await Self.waitUntil { answered.get() == [first, second] }
        let marked = try await harness.pool.query(
            "SELECT count(*) AS n FROM outbox WHERE status = 'delivered' AND aggregate_key = \("app_store:\(first)") AND target = 'webhook'"
        )
        #expect(try marked[0].decode("n", as: Int.self) == 0, "the first one's mark still waits for its row")
        release.signal()
        try await holder.value
        try await Self.waitUntil {
            (try? await harness.count(
                "outbox WHERE \(VerifyHarness.sentCondition) AND event_type = 'transaction.verified' AND target = 'webhook'"
            )) == 2
        }
        await receiver.shutdown()
    }

    /// Three purchases verified, then the App Store's refund of the second: four events, two of
    /// them (the second's) to be delivered in order.
    static func purchases(_ ids: [String], thenARefundOfTheSecond harness: VerifyHarness) async throws {
        #expect(try await harness.verifyPurchases(ids) == ids.map { _ in 200 })
        #expect(
            try await NotificationsDriveTheLedger.notify(
                harness, type: "REFUND",
                transaction: [
                    "transactionId": ids[1], "originalTransactionId": ids[1],
                    "revocationDate": Int64(Date().timeIntervalSince1970 * 1000),
                ]
            ).status == 200)
    }

    @Test func everyEventArrivesInOrderAfterAnOutageNoneLost() async throws {
        let receiver = try WebhookReceiver()
        let token = String(repeating: "a", count: 32)
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(), adminToken: token, webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)

        let ids = ["2000000000005001", "2000000000005002", "2000000000005003"]
        try await Self.purchases(ids, thenARefundOfTheSecond: harness)

        // Down: attempts pile up, nothing is acknowledged, the operator sees the failures.
        try await Self.waitUntil { receiver.deliveries.get().count >= 8 }
        #expect(receiver.acknowledged.isEmpty)
        // Which of them were tried before the receiver's circuit opened depends on timing; every
        // one is still waiting, none given up, and the operator sees the failures.
        let failing = try await harness.service.repositories.outbox.list(failedOnly: true)
        #expect(!failing.isEmpty)
        let waiting = try await harness.pool.query("SELECT count(*) AS n FROM outbox WHERE status = 'pending'")[0]
            .decode("n", as: Int.self)
        #expect(waiting == 4, "\(waiting) of 4 events still waiting for the receiver")
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
        let outboxIDs = try await harness.pool.query("SELECT event_id::text AS id FROM outbox").map {
            try $0.decode("id", as: String.self)
        }
        #expect(Set(receiver.deliveries.get().map(\.eventID)) == Set(outboxIDs))
        // In order per transaction.
        let second = acknowledged.filter { $0.transactionID == ids[1] }.map(\.type)
        #expect(second == ["transaction.verified", "transaction.refunded"])
        // The receiver answers before the worker records the delivery: wait for the record.
        try await Self.waitUntil {
            try await harness.count("outbox WHERE NOT \(VerifyHarness.sentCondition)") == 0
        }

        // An operator can send one again, through the admin API; it keeps its id.
        let again = try #require(acknowledged.first?.eventID)
        let unauthorized = try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/admin/webhooks/\(again)/redeliver")
        #expect(unauthorized.status == 401)
        let queued = try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/admin/webhooks/\(again)/redeliver",
            headers: ["Authorization": "Bearer \(token)"])
        #expect(queued.status == 200)
        try await Self.waitUntil { receiver.acknowledged.filter { $0.eventID == again }.count == 2 }
        #expect(receiver.acknowledged.filter { $0.eventID == again }.count == 2)
        let listed = try await RawHTTP.request(
            port: harness.client.port, path: "/admin/webhooks", headers: ["Authorization": "Bearer \(token)"])
        #expect((try listed.json()["events"] as? [[String: Any]])?.count == 4)
        await harness.service.shutdown()
        await receiver.server.shutdown()
    }

    @Test func eventsThatNeverGetThroughStayVisibleAsDeadAndCanBeRedelivered() async throws {
        let receiver = try WebhookReceiver()
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(giveUpAfter: .seconds(1)), webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let receipt = try harness.pki.sign(AppleTestPKI.transaction())
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        try await Self.waitUntil {
            try await harness.pool.query("SELECT status FROM outbox")[0].decode("status", as: String.self) == "dead"
        }
        let dead = try await harness.service.repositories.outbox.list(failedOnly: true)
        #expect(dead.count == 1)

        receiver.up.set(true)
        let eventID = try await harness.pool.query("SELECT event_id::text AS id FROM outbox")[0].decode(
            "id", as: String.self)
        #expect(try await harness.service.repositories.outbox.redeliver(eventID: eventID))
        try await Self.waitUntil { !receiver.acknowledged.isEmpty }
        #expect(receiver.acknowledged.map(\.eventID) == [eventID])
        #expect(try await harness.service.repositories.outbox.redeliver(eventID: UUID().uuidString) == false)
        await harness.service.shutdown()
        await receiver.server.shutdown()
    }

    /// A message is given up on by the service's clock: failures are retried while it stands within
    /// `giveUpAfter` of the event, and the first failure once it has moved past ends the event as dead.
    @Test func aMessageIsGivenUpOnceTheServicesClockPassesGiveUpAfter() async throws {
        let receiver = try WebhookReceiver()  // down: every delivery fails
        let clock = MovableClock()
        let harness = try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(giveUpAfter: .seconds(3600)), webhookURL: receiver.url, now: clock.now)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        let receipt = try harness.pki.sign(AppleTestPKI.transaction())
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        let pool = harness.pool
        @Sendable func outbox() async throws -> (status: String, attempts: Int) {
            let row = try await pool.query("SELECT status, attempts FROM outbox")[0]
            return (try row.decode("status", as: String.self), try row.decode("attempts", as: Int.self))
        }
        // Failed three times within the hour by the service's clock: still retried.
        try await Self.waitUntil { try await outbox().attempts >= 3 }
        #expect(try await outbox().status == "pending")
        clock.move(by: 2 * 3600)
        try await Self.waitUntil { try await outbox().status == "dead" }
        #expect(receiver.deliveries.get().allSatisfy { !$0.acknowledged })
        await harness.service.shutdown()
        await receiver.server.shutdown()
    }

    @Test func backoffGrowsWithJitterAndIsCapped() {
        for attempts in 1...12 {
            let step = min(Duration.seconds(10) * (1 << (attempts - 1)), .seconds(3600))
            let delays = (0..<50).map { _ in
                OutboxWorker.delay(afterAttempts: attempts, base: .seconds(10), max: .seconds(3600))
            }
            #expect(delays.allSatisfy { $0 >= step / 2 && $0 <= step })
            // Jitter: fifty draws spread over the upper half of the step (zero jitter would give one value).
            #expect(Set(delays).count > 40)
            if let low = delays.min(), let high = delays.max() { #expect(high - low >= step / 8) }
        }
    }
}

/// Game servers' URLs are checked when a message is sent, not only when they are set: https
/// unless the client allows http, and never our own network unless the operator allows it.
@Suite struct OutboundDestinations {
    @Test func privateAndInsecureDestinationsAreRefusedAtDeliveryTime() async throws {
        let receiver = try WebhookReceiver()
        receiver.up.set(true)
        let harness = try await VerifyHarness.start(outbox: VerifyHarness.fastOutbox(), webhookURL: receiver.url)
        defer { harness.stop() }
        receiver.secret.set(harness.client.secret)
        // The operator did not allow private destinations (this service, unlike the harness default).
        var configuration = harness.service.configuration
        configuration.port = 0
        configuration.outboundAllowPrivate = false
        let strict = try Service(
            configuration: configuration, logger: Logger(minimumLevel: .error),
            database: try Database.open(configuration, logger: Logger(minimumLevel: .error)),
            stores: [
                AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [harness.pki.root])).registration
            ])
        strict.outboxConfiguration = VerifyHarness.fastOutbox()
        await harness.service.shutdown()  // only the strict service's worker delivers from now on
        try await strict.start()
        defer { Task.detached { await strict.shutdown() } }
        let client = SignedClient(port: strict.port, clientID: harness.client.clientID, secret: harness.client.secret)
        let receipt = try harness.pki.sign(AppleTestPKI.transaction())
        #expect(try await client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 200)
        let pool = strict.database.pool
        try await WebhookDelivery.waitUntil {
            try await pool.query("SELECT last_error FROM outbox").first?.decode("last_error", as: String?.self)?
                .contains("not public") == true
        }
        #expect(receiver.deliveries.get().isEmpty, "nothing reached the loopback receiver")

        // With private destinations allowed, plain http still needs the client's --allow-insecure-url.
        var insecureOff = ClientSettings()
        insecureOff.settings[Client.allowInsecureURLSetting] = .some(nil)
        _ = try await strict.clients.update(harness.client.clientID, insecureOff)
        await strict.shutdown()
        var lenient = configuration
        lenient.outboundAllowPrivate = true
        let second = try Service(
            configuration: lenient, logger: Logger(minimumLevel: .error),
            database: try Database.open(lenient, logger: Logger(minimumLevel: .error)),
            stores: [
                AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [harness.pki.root])).registration
            ])
        second.outboxConfiguration = VerifyHarness.fastOutbox()
        try await second.start()
        defer { Task.detached { await second.shutdown() } }
        let secondPool = second.database.pool
        try await secondPool.execute("UPDATE outbox SET next_attempt_at = now(), last_error = NULL")
        try await WebhookDelivery.waitUntil {
            try await secondPool.query("SELECT last_error FROM outbox").first?.decode("last_error", as: String?.self)?
                .contains("https") == true
        }
        #expect(receiver.deliveries.get().isEmpty)
        await second.shutdown()
    }

    /// An IPv6 receiver's URL carries its address in brackets; it is resolved, checked and pinned
    /// the way every game server's URL is, and delivered to.
    @Test func aWebhookToAnIPv6LiteralIsDelivered() async throws {
        let receiver = try WebhookReceiver(host: "::1")
        #expect(receiver.url.hasPrefix("http://[::1]:"))
        let harness = try await WebhookDelivery.onePurchaseDelivered(to: receiver)
        defer { harness.stop() }
        #expect(receiver.acknowledged.allSatisfy { $0.signatureValid })
        await harness.service.shutdown()
        await receiver.server.shutdown()
    }

    @Test(arguments: [
        ("127.0.0.1", false), ("10.1.2.3", false), ("169.254.169.254", false), ("172.20.0.1", false),
        ("192.168.1.1", false),
        ("100.64.0.1", false), ("0.0.0.0", false), ("::1", false), ("fe80::1", false), ("fd00::1", false),
        ("::ffff:127.0.0.1", false),
        ("::ffff:10.0.0.1", false), ("2002:7f00:1::1", false), ("2001:0:4136:e378::1", false), ("fec0::1", false),
        ("192.88.99.1", false), ("8.8.8.8", true), ("2606:4700:4700::1111", true), ("::ffff:8.8.8.8", true),
        ("not-an-ip", false),
        // IPv6 that carries an IPv4 address for translation is judged as that address.
        ("::ffff:10.1.2.3", false), ("::ffff:192.168.0.1", false), ("::ffff:7f00:1", false),
        ("::ffff:0:127.0.0.1", false),
        ("::ffff:0:8.8.8.8", true), ("64:ff9b::8.8.8.8", true), ("64:ff9b::127.0.0.1", false),
        ("64:ff9b::a01:203", false),
        ("64:ff9b::192.168.0.1", false), ("64:ff9b:1::8.8.8.8", false),
    ])
    func addressesAreClassified(address: String, isPublic: Bool) {
        #expect(PublicAddress.isPublic(address) == isPublic)
    }
}

extension WebhookDelivery {
    /// One purchase verified for a client whose webhook goes to `receiver` (answering), returned
    /// once its webhook was acknowledged and settled; the caller stops the harness.
    static func onePurchaseDelivered(to receiver: WebhookReceiver) async throws -> VerifyHarness {
        receiver.up.set(true)
        let harness = try await VerifyHarness.start(outbox: VerifyHarness.fastOutbox(), webhookURL: receiver.url)
        do {
            receiver.secret.set(harness.client.secret)
            let receipt = try harness.pki.sign(AppleTestPKI.transaction())
            #expect(
                try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status
                    == 200)
            try await waitUntil { try await harness.count("outbox WHERE \(VerifyHarness.sentCondition)") == 1 }
            #expect(receiver.acknowledged.map(\.type) == ["transaction.verified"])
            return harness
        } catch {
            harness.stop()
            throw error
        }
    }
}
