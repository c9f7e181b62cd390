import AppStore
import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A consumption report is bound to the transaction its path names (signature version 2), and an
/// older report never takes the place of a newer one, whether it is replayed, delayed or racing.
@Suite struct ConsumptionReportOrder {
    static func path(_ id: String) -> String { "/v1/transactions/app_store/\(id)/consumption" }

    static func verify(_ harness: VerifyHarness, _ id: String) async throws {
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id]))
        let answer = try await harness.client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": "p"])
        #expect(answer.status == 200, "\(answer.text)")
    }

    /// The stored report of `id`: (delivered, consumed milliunits, its own time in ms).
    static func stored(
        _ harness: VerifyHarness, _ id: String
    ) async throws -> (delivered: Bool, consumed: Int?, asOfMs: Int64)? {
        try await harness.pool.query(
            """
            SELECT c.delivered, c.consumed_milliunits, c.as_of_ms FROM consumption_reports c JOIN transactions t ON t.id = c.transaction_row_id
            WHERE t.transaction_id = \(id)
            """
        ).first.map { (try $0.decode("delivered"), try $0.decode("consumed_milliunits"), try $0.decode("as_of_ms")) }
    }

    static func body(_ json: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: json, options: .sortedKeys)
    }

    @Test func aVersion1SignedReportIsRefusedNamingVersion2() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        try await Self.verify(harness, "2000000000009001")
        let refused = try await harness.client.post(Self.path("2000000000009001"), json: ["delivered": true])
        #expect(refused.status == 401, "\(refused.text)")
        #expect(try refused.json()["error"] as? String == "UNAUTHORIZED")
        #expect(
            (try refused.json()["message"] as? String)?.contains("X-Signature-Version: 2") == true, "\(refused.text)")
        #expect(try await Self.stored(harness, "2000000000009001") == nil)
    }

    /// A report for X, captured, cannot be sent to Y: version 1 (the body alone) is refused on
    /// this route, and version 2 covers the path.
    @Test func aReportSignedForOneTransactionDoesNotAuthenticateAnother() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let x = "2000000000009011", y = "2000000000009012"
        try await Self.verify(harness, x)
        try await Self.verify(harness, y)
        let report = try Self.body(["delivered": true, "consumed_percent": 100])
        let stamp = Int(Date().timeIntervalSince1970)
        #expect(try await harness.client.post(Self.path(x), body: report, timestamp: stamp, version: "2").status == 200)

        let moved = try await harness.client.post(
            Self.path(y), body: report, timestamp: stamp, version: "2", signedTarget: Self.path(x))
        #expect(moved.status == 401, "\(moved.text)")
        let bodyOnly = try await harness.client.post(Self.path(y), body: report, timestamp: stamp)
        #expect(bodyOnly.status == 401, "a version-1 signature covers no path: \(bodyOnly.text)")
        #expect(try await Self.stored(harness, y) == nil, "nothing was reported for Y")
        #expect(try await Self.stored(harness, x)?.consumed == 100_000)
    }

    /// A replayed older report leaves the newer one in place, with or without `reported_at_ms`;
    /// the same report again is a retry; racing reports leave the latest.
    @Test func anOlderReportNeverReplacesANewerOne() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let timed = "2000000000009021", untimed = "2000000000009022", raced = "2000000000009023"
        for id in [timed, untimed, raced] { try await Self.verify(harness, id) }

        // Ordered by `reported_at_ms`.
        let older = try Self.body(["delivered": true, "consumed_percent": 80, "reported_at_ms": 1_700_000_000_000])
        let newer = try Self.body(["delivered": false, "reported_at_ms": 1_700_000_060_000])
        let stamp = Int(Date().timeIntervalSince1970)
        let first = try await harness.client.post(Self.path(timed), body: older, timestamp: stamp, version: "2")
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["superseded"] as? Bool == false, "\(first.text)")
        let again = try await harness.client.post(Self.path(timed), body: older, timestamp: stamp, version: "2")
        #expect(again.status == 200, "\(again.text)")
        #expect(try again.json()["superseded"] as? Bool == false, "a retry is not superseded: \(again.text)")
        #expect(try await harness.client.post(Self.path(timed), body: newer, version: "2").status == 200)
        let replayed = try await harness.client.post(Self.path(timed), body: older, timestamp: stamp, version: "2")
        #expect(replayed.status == 200, "\(replayed.text)")
        #expect(try replayed.json()["superseded"] as? Bool == true, "\(replayed.text)")
        let standing = try #require(try replayed.json()["consumption"] as? [String: Any])
        #expect(
            standing["delivered"] as? Bool == false && standing["reported_at_ms"] as? Int64 == 1_700_000_060_000,
            "\(standing)")
        #expect(
            try await Self.stored(harness, timed).map { [$0.delivered ? 1 : 0, Int($0.asOfMs)] } == [
                0, 1_700_000_060_000,
            ])

        // Without `reported_at_ms`: ordered by the signed X-Timestamp, which a replay must keep.
        let now = Int(Date().timeIntervalSince1970)
        let early = try Self.body(["delivered": true, "consumed_percent": 90])
        #expect(
            try await harness.client.post(Self.path(untimed), body: early, timestamp: now - 20, version: "2").status
                == 200)
        #expect(
            try await harness.client.post(
                Self.path(untimed), body: try Self.body(["delivered": false]), timestamp: now - 10, version: "2"
            ).status == 200)
        let replayedEarly = try await harness.client.post(
            Self.path(untimed), body: early, timestamp: now - 20, version: "2")
        #expect(try replayedEarly.json()["superseded"] as? Bool == true, "\(replayedEarly.text)")
        #expect(try await Self.stored(harness, untimed)?.delivered == false)

        // Reports racing each other: the latest time stands, whichever commits last.
        let times: [Int64] = (1...12).map { 1_700_000_000_000 + Int64($0) * 1000 }.shuffled()
        let client = harness.client
        try await withThrowingTaskGroup(of: Int.self) { group in
            for time in times {
                group.addTask {
                    try await client.post(
                        Self.path(raced),
                        body: try Self.body([
                            "delivered": true, "consumed_percent": Double(time % 100_000) / 1000,
                            "reported_at_ms": time,
                        ]), version: "2"
                    ).status
                }
            }
            for try await status in group { #expect(status == 200) }
        }
        let latest = try #require(times.max())
        #expect(
            try await Self.stored(harness, raced).map { [Int64($0.consumed ?? -1), $0.asOfMs] } == [
                latest % 100_000, latest,
            ])

        // A time far past the signed one would hold off every later report: refused.
        let ahead = try await harness.client.post(
            Self.path(raced), body: try Self.body(["delivered": true, "reported_at_ms": Int64(now + 3600) * 1000]),
            version: "2")
        #expect(ahead.status == 400 && ahead.text.contains("reported_at_ms"), "\(ahead.text)")
    }
}

extension AppleConsumptionRequests {
    /// What answers Apple's consumption request follows the newer report, although the older one
    /// was sent again after it.
    @Test func theAnswerFollowsTheNewerReportAfterAnOlderOneIsReplayed() async throws {
        let fake = try FakeAppStoreServerAPI()
        let receiver = try WebhookReceiver()
        let harness = try await Self.start(fake, receiver: receiver)
        defer { harness.stop() }
        try await Self.setPolicy(harness, consent: true)
        try Self.appleKnows(fake, Self.gems())
        #expect(try await NotificationHistoryReconciliation.verify(harness, Self.gems()).status == 200)
        let path = "/v1/transactions/app_store/\(Self.id)/consumption"
        let older = try JSONSerialization.data(
            withJSONObject: ["delivered": true, "consumed_percent": 80, "reported_at_ms": 1_700_000_000_000],
            options: .sortedKeys)
        let stamp = Int(Date().timeIntervalSince1970)
        #expect(try await harness.client.post(path, body: older, timestamp: stamp, version: "2").status == 200)
        #expect(
            try await harness.client.post(
                path, json: ["delivered": false, "reported_at_ms": 1_700_000_060_000], version: "2"
            ).status == 200)
        // The older report's request, captured and sent again within the signature window.
        let replayed = try await harness.client.post(path, body: older, timestamp: stamp, version: "2")
        #expect(replayed.status == 200, "\(replayed.text)")
        #expect(try replayed.json()["superseded"] as? Bool == true, "\(replayed.text)")

        try await Self.pushRequest(harness, fake, Self.gems())
        try await Self.answerDueNow(harness)
        try await WebhookDelivery.waitUntil { try await Self.request(harness)?.status == "answered" }
        #expect(
            fake.state.consumptionAnswers.get().map(\.body) == [
                [
                    "customerConsented": "1", "sampleContentProvided": "0",
                    "deliveryStatus": "UNDELIVERED_OTHER", "refundPreference": "GRANT_FULL",
                ]
            ])
        await receiver.server.shutdown()
        await fake.shutdown()
    }
}

/// The rule is the core's, for every dialect: a signed route with a parameter in its path needs
/// signature version 2, a signed POST to a fixed path still takes version 1.
@Suite struct PathBoundSignatures {
    struct ItemNotes: DialectProvider {
        let name = "item-notes"
        func routes(core: any DialectCore) -> [Route] {
            [
                Route("POST", "/test/items/{item_id}/notes", authentication: .signedClient(.allow)) { _, context in
                    .json(["item_id": context.pathParameters["item_id"] ?? ""])
                },
                Route("POST", "/test/notes", authentication: .signedClient(.allow)) { _, _ in .json(["noted": true]) },
            ]
        }
        func render(_ refusal: RouteRefusal) -> RouteResponse {
            .json(
                ["refused": refusal.code.rawValue, "message": refusal.message],
                status: refusal.code == .unauthorized ? 401 : 400)
        }
    }

    @Test func aDialectRouteNamingWhatItActsOnNeedsVersion2() async throws {
        let harness = try await VerifyHarness.start(dialects: [ItemNotes()])
        defer { harness.stop() }
        let bodyOnly = try await harness.client.post("/test/items/sword/notes", json: ["note": "x"])
        #expect(bodyOnly.status == 401, "\(bodyOnly.text)")
        #expect(bodyOnly.text.contains("X-Signature-Version: 2"), "\(bodyOnly.text)")
        let bound = try await harness.client.post("/test/items/guild%2Fsword/notes", json: ["note": "x"], version: "2")
        #expect(bound.status == 200, "\(bound.text)")
        #expect(try bound.json()["item_id"] as? String == "guild/sword")
        let moved = try await harness.client.post(
            "/test/items/shield/notes", json: ["note": "x"], version: "2", signedTarget: "/test/items/sword/notes")
        #expect(moved.status == 401, "\(moved.text)")
        #expect(
            try await harness.client.post("/test/notes", json: ["note": "x"]).status == 200,
            "a fixed path still takes version 1")
    }
}
