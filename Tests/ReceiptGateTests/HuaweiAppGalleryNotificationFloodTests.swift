import Foundation
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import OpenSSLCrypto
import TestSupport
import Testing

/// Anyone may post an order notification (Huawei does not sign them) naming a real app id and a
/// made-up token. Through the running service: nothing is recorded for such a token, Huawei is
/// asked no more than the app's budget and no more at once than the cap (503 beyond, Huawei's
/// "send it again"), the same notification twice asks once, a genuine one is still recorded and
/// applied, and verifies meanwhile are answered on threads of their own.
@Suite struct HuaweiAppGalleryNotificationFlood {
    static let budget = 20
    static let atOnce = 4
    /// How long a held re-read may wait for Huawei: the test releases them long before, so no held
    /// re-read is answered before that, and whatever is answered meanwhile did not wait for them.
    static let readTimeout: Duration = .seconds(120)

    static func post(_ harness: HuaweiAppGalleryHarness, _ body: Data) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: harness.service.port, method: "POST", path: "/v1/notifications/huawei-appgallery",
            headers: ["Content-Type": "application/json"], body: body)
    }

    static func madeUp() throws -> Data {
        try FakeHuawei.orderNotification(type: 2, token: "tok.flood." + Hex.encode(SecureRandom.bytes(8)))
    }

    /// "ignored" for a 200 that recorded nothing, else the status.
    static func outcome(_ response: RawHTTP.Response) -> String {
        response.status == 200 ? ((try? response.json()["status"] as? String) ?? "200 ?") : String(response.status)
    }

    static func tally(_ outcomes: [String]) -> [String: Int] {
        Dictionary(grouping: outcomes, by: { $0 }).mapValues(\.count)
    }

    @Test func aFloodOfMadeUpOrderTokensRecordsNothingAndAsksHuaweiOnlyWithinTheBounds() async throws {
        // The app's budget a minute is spent against this clock, which does not move: what the
        // budget allows does not depend on how long a busy machine takes to send the flood.
        let clock = LockedBox(Date())
        let harness = try await HuaweiAppGalleryHarness.start(clock: clock) { configuration in
            configuration.notificationReads.perAppPerMinute = Self.budget
            configuration.notificationReads.atOnce = Self.atOnce
            configuration.notificationReads.timeout = Self.readTimeout
        }
        defer { harness.stop() }
        var verifyCalls = 0  // what /v1/verify asked Huawei's verify route, told apart from the notifications' re-reads

        // A genuine refund is recorded and applied; sent again, it is answered without asking Huawei.
        try harness.huawei.addProduct(token: "tok.genuine", productID: "no.ads", orderID: "order.genuine", kind: 1)
        #expect(try await harness.verify("tok.genuine", product: "no.ads").status == 200)
        verifyCalls += 1
        try harness.huawei.addProduct(
            token: "tok.genuine", productID: "no.ads", orderID: "order.genuine", kind: 1, state: 2)
        let genuine = try FakeHuawei.orderNotification(type: 2, token: "tok.genuine", productID: "no.ads")
        let first = try await Self.post(harness, genuine)
        #expect(first.status == 200, "\(first.text)")
        #expect(try first.json()["status"] as? String == "accepted", "\(first.text)")
        let again = try await Self.post(harness, genuine)
        #expect(try again.json()["duplicate"] as? Bool == true, "\(again.text)")
        #expect(harness.huawei.hits("verify") == verifyCalls + 1)
        #expect(try await harness.state("order.genuine") == "refunded")

        // Huawei holds every re-read of a made-up token: at most `atOnce` are asked; the rest are
        // refused at once instead of queueing.
        harness.huawei.hold(tokensStartingWith: "tok.flood.")
        let before = harness.huawei.hits("verify")
        let port = harness.service.port
        let answered = LockedBox(0)
        let flood = Task {
            await withTaskGroup(of: String.self) { group in
                for _ in 0..<40 {
                    group.addTask {
                        guard let body = try? Self.madeUp(),
                            let response = try? await RawHTTP.request(
                                port: port, method: "POST", path: "/v1/notifications/huawei-appgallery",
                                headers: ["Content-Type": "application/json"], body: body)
                        else { return "no answer" }
                        answered.update { $0 += 1 }
                        return Self.outcome(response)
                    }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
        }
        #expect(await eventually(within: .seconds(30)) { harness.huawei.hits("verify") >= before + Self.atOnce })
        // A purchase verified meanwhile is answered on threads of its own.
        try harness.huawei.addProduct(token: "tok.verify.during", orderID: "order.verify.during")
        let during = try await harness.verify("tok.verify.during")
        verifyCalls += 1
        #expect(during.status == 200, "\(during.text)")
        #expect(answered.get() <= 40 - Self.atOnce, "a verify was answered only after held re-reads ended")
        // Every notification but the held ones is answered while they are still held.
        #expect(await eventually(within: .seconds(30)) { answered.get() >= 40 - Self.atOnce })
        harness.huawei.releaseHeld()
        let held = await value(of: flood, within: .seconds(60)) ?? []
        #expect(held.count == 40)
        #expect(Self.tally(held) == ["ignored": Self.atOnce, "503": 40 - Self.atOnce], "\(Self.tally(held))")

        // Past the app's budget: 503, and Huawei is not asked.
        var budgeted: [String] = []
        for _ in 0..<(2 * Self.budget) {
            budgeted.append(Self.outcome(try await Self.post(harness, try Self.madeUp())))
        }
        #expect(Set(budgeted).isSubset(of: ["ignored", "503"]), "\(Self.tally(budgeted))")
        #expect(budgeted.last == "503", "\(Self.tally(budgeted))")
        // The clock stood still: the budget never refilled.
        let reads = harness.huawei.hits("verify") - verifyCalls
        #expect(
            reads <= Self.budget, "notifications asked Huawei \(reads) times; the budget is \(Self.budget) a minute")

        // An app id no client registered: refused, nothing asked.
        let hitsBefore = harness.huawei.hits("verify")
        let stranger = try JSONSerialization.data(withJSONObject: [
            "applicationId": "999000999",
            "orderNotification": ["notificationType": 2, "purchaseToken": "tok.stranger", "productId": "no.ads"],
        ])
        let refused = try await Self.post(harness, stranger)
        #expect(refused.status == 401 && refused.text.contains("UNKNOWN_APPLICATION"), "\(refused.text)")
        #expect(harness.huawei.hits("verify") == hitsBefore)

        // Nothing recorded but the genuine refund.
        #expect(
            try await harness.count("SELECT count(*) AS n FROM store_notifications WHERE store = 'huawei_appgallery'")
                == 1)
        // Verifies keep working with the notifications' budget spent.
        try harness.huawei.addProduct(token: "tok.verify.after", orderID: "order.verify.after")
        #expect(try await harness.verify("tok.verify.after").status == 200)
    }
}
