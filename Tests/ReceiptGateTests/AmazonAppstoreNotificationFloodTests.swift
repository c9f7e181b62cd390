import AmazonAppstoreTestSupport
import Crypto
import Foundation
import Testing
import TestSupport

/// An attacker's flood of forged SNS messages, each naming a different certificate URL the rule
/// allows, on a certificate host that takes connections and never answers: a real Amazon verify
/// made meanwhile is answered as fast as without the flood, and every forged message is answered
/// (503, SNS's "send it again") instead of waiting behind the others.
@Suite struct AmazonAppstoreNotificationFlood {
    static let forgedCount = 300
    /// The test's own connections at once: under the service's limit per address (256), and light
    /// enough on a shared machine not to slow the suites that run alongside.
    static let concurrency = 64
    static let certificateTimeout: Duration = .seconds(20)

    /// The verify request signed as `SignedClient` signs it, timed on the thread that sends it
    /// (a loaded cooperative pool must not add its own delay to the figure).
    static func timedVerify(_ harness: AmazonAppstoreHarness, receipt: String) async throws -> (RawHTTP.Response, Duration) {
        let body = try JSONSerialization.data(withJSONObject: ["store": "amazon_appstore", "receipt": receipt, "product_id": "gems100",
                                                               "amazon_user_id": AmazonAppstoreEndToEnd.user])
        let client = harness.client
        let stamp = String(Int(Date().timeIntervalSince1970))
        let signature = Hex.encode(try HMACSHA256.authenticationCode(key: Data(client.secret.utf8),
                                                                     message: Data("\(client.clientID).\(stamp).\(try SHA256.hex(body))".utf8)))
        let head = "POST /v1/verify HTTP/1.1\r\nHost: 127.0.0.1:\(client.port)\r\nConnection: close\r\nContent-Type: application/json\r\n"
            + "X-Client-ID: \(client.clientID)\r\nX-Timestamp: \(stamp)\r\nX-Signature: \(signature)\r\nContent-Length: \(body.count)\r\n\r\n"
        let (result, elapsed) = await RawHTTP.timedExchange(port: client.port, pieces: [Data(head.utf8) + body], timeout: 60)
        return (try result.get(), elapsed)
    }

    @Test func aFloodOfForgedCertificateURLsLeavesVerificationFastAndEveryMessageAnswered() async throws {
        // Held certificate fetches give up after `certificateTimeout`: longer than the service's
        // 5 s, so that a verify made to wait for them stands well apart from one slowed only by a
        // machine busy with the whole suite.
        let harness = try await AmazonAppstoreHarness.start(certificateTimeout: Self.certificateTimeout)
        defer { harness.stop() }
        try harness.rvs.addReceipt("r-during-flood", userID: AmazonAppstoreEndToEnd.user)
        let (before, unloaded) = try await Self.timedVerify(harness, receipt: "r-during-flood")
        #expect(before.status == 200, "\(before.text)")

        harness.sns.hold.close()
        let port = harness.sns.server.port
        let forged = try (0..<Self.forgedCount).map { index in
            try harness.sns.notification(AmazonAppstoreHarness.news("CONSUMABLE_PURCHASED", receipt: "r-forged-\(index)"),
                                         certificateURL: "http://127.0.0.1:\(port)/SimpleNotificationService-\(Hex.encode(SecureRandom.bytes(8))).pem")
        }
        let servicePort = harness.service.port
        let flood = Task {
            await withTaskGroup(of: Int?.self) { group in
                var next = 0, statuses: [Int?] = []
                func send(_ body: Data) {
                    group.addTask {
                        try? await RawHTTP.request(port: servicePort, method: "POST", path: "/v1/notifications/amazon-appstore",
                                                   headers: ["Content-Type": "text/plain; charset=UTF-8"], body: body).status
                    }
                }
                while next < min(Self.concurrency, forged.count) { send(forged[next]); next += 1 }
                while let status = await group.next() {
                    statuses.append(status)
                    if next < forged.count { send(forged[next]); next += 1 }
                }
                return statuses
            }
        }
        // The verify is made once the flood holds as many fetches as may run at once (as many as
        // the RVS client has transfer threads, were they shared).
        #expect(await eventually(within: .seconds(60)) { harness.sns.requestedFiles.get().count >= 4 })
        let (during, elapsed) = try await Self.timedVerify(harness, receipt: "r-during-flood")
        #expect(during.status == 200, "\(during.text)")
        // The certificate fetches are held until their timeout, and more queue behind them: a
        // verify that shared their transfer threads would wait at least that. Bounded above what a
        // loaded test machine adds (the release binary answers in milliseconds, docs/security.md).
        #expect(elapsed < Self.certificateTimeout / 2, "a verify took \(elapsed) during the flood (\(unloaded) before it)")

        let started = ContinuousClock.now
        let statuses = await value(of: flood, within: .seconds(60))
        #expect(statuses != nil, "the forged messages were not all answered within 60 s")
        let answered = statuses ?? []
        #expect(answered.count == Self.forgedCount)
        #expect(answered.allSatisfy { $0 == 503 }, "\(Dictionary(grouping: answered.map { $0.map(String.init) ?? "no answer" }, by: { $0 }).mapValues(\.count))")
        // Each forged message waits at most for its own fetch, never behind the others'.
        #expect(ContinuousClock.now - started < Self.certificateTimeout * 2)
    }
}
