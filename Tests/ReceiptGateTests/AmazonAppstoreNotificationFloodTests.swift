import AmazonAppstoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

/// An attacker's flood of forged SNS messages, each naming a different certificate URL the rule
/// allows, on a certificate host that takes connections and answers only when the test lets it: a
/// real Amazon verify made meanwhile is answered while those fetches are still held, and every
/// forged message but the few being fetched is answered at once (503, SNS's "send it again")
/// instead of waiting behind them.
@Suite struct AmazonAppstoreNotificationFlood {
    static let forgedCount = 300
    /// The test's own connections at once: under the service's limit per address (256), and light
    /// enough on a shared machine not to slow the suites that run alongside.
    static let concurrency = 64
    /// Longer than the test: a held fetch never gives up on its own, so whatever is answered while
    /// the host holds them did not wait for them.
    static let certificateTimeout: Duration = .seconds(3600)
    /// Certificate fetches the service runs at once (`AmazonAppstoreConfiguration`'s default).
    static let maxFetches = 4

    static func verify(_ client: SignedClient, receipt: String) async throws -> RawHTTP.Response {
        try await client.post(
            "/v1/verify",
            json: [
                "store": "amazon_appstore", "receipt": receipt, "product_id": "gems100",
                "amazon_user_id": AmazonAppstoreEndToEnd.user,
            ])
    }

    @Test func aFloodOfForgedCertificateURLsLeavesVerificationAnsweredAndEveryMessageAnswered() async throws {
        let harness = try await AmazonAppstoreHarness.start(certificateTimeout: Self.certificateTimeout)
        defer { harness.stop() }
        try harness.rvs.addReceipt("r-during-flood", userID: AmazonAppstoreEndToEnd.user)
        let client = harness.client
        let before = try await Self.verify(client, receipt: "r-during-flood")
        #expect(before.status == 200, "\(before.text)")

        harness.sns.hold.close()
        let port = harness.sns.server.port
        let forged = try (0..<Self.forgedCount).map { index in
            try harness.sns.notification(
                AmazonAppstoreHarness.news("CONSUMABLE_PURCHASED", receipt: "r-forged-\(index)"),
                certificateURL:
                    "http://127.0.0.1:\(port)/SimpleNotificationService-\(Hex.encode(SecureRandom.bytes(8))).pem")
        }
        let servicePort = harness.service.port
        let answered = LockedBox(0)
        let flood = Task {
            await withTaskGroup(of: Int?.self) { group in
                var next = 0, statuses: [Int?] = []
                func send(_ body: Data) {
                    group.addTask {
                        try? await RawHTTP.request(
                            port: servicePort, method: "POST", path: "/v1/notifications/amazon-appstore",
                            headers: ["Content-Type": "text/plain; charset=UTF-8"], body: body
                        ).status
                    }
                }
                while next < min(Self.concurrency, forged.count) { send(forged[next]); next += 1 }
                while let status = await group.next() {
                    answered.update { $0 += 1 }
                    statuses.append(status)
                    if next < forged.count { send(forged[next]); next += 1 }
                }
                return statuses
            }
        }
        // The verify is made once the flood holds as many fetches as may run at once (as many as
        // the RVS client has transfer threads, were they shared).
        #expect(await eventually { harness.sns.requestedFiles.get().count >= Self.maxFetches })
        let during =
            await value(of: Task { try? await Self.verify(client, receipt: "r-during-flood") }, within: .seconds(300))
            ?? nil
        #expect(
            during?.status == 200,
            "a verify was not answered while certificate fetches were held: \(during?.text ?? "no answer")")
        // Everything but the messages whose fetches are held is answered while they are held.
        #expect(
            await eventually(within: .seconds(300)) { answered.get() >= Self.forgedCount - Self.maxFetches },
            "answered while the fetches were held: \(answered.get()) of \(Self.forgedCount)")
        #expect(
            harness.sns.requestedFiles.get().count == Self.maxFetches,
            "only as many fetches as may run at once were started")

        harness.sns.hold.release()
        let statuses = await value(of: flood, within: .seconds(300))
        #expect(statuses != nil, "the forged messages were not all answered")
        let all = statuses ?? []
        #expect(all.count == Self.forgedCount)
        #expect(
            all.allSatisfy { $0 == 503 },
            "\(Dictionary(grouping: all.map { $0.map(String.init) ?? "no answer" }, by: { $0 }).mapValues(\.count))")
    }
}
