import Foundation
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// Through the running service, with two tenants: made-up order notifications naming one
/// tenant's public app id take nothing another tenant's genuine notifications need, nor what the
/// same app's signed events need; and a forged refund sent before Huawei's does not hide Huawei's.
@Suite struct HuaweiAppGalleryNotificationTenants {
    static let appB = "107000333"
    static let secretB = "tenant-b-secret-8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"
    static let packageB = "com.example.tenant.b"

    static func madeUp() throws -> Data {
        try FakeHuawei.orderNotification(type: 2, token: "tok.flood." + Hex.encode(SecureRandom.bytes(8)))
    }

    /// The body's `status` for a 200 ("accepted", "ignored"), else the status code.
    static func outcome(_ response: RawHTTP.Response) -> String {
        response.status == 200 ? ((try? response.json()["status"] as? String) ?? "200 ?") : String(response.status)
    }

    @Test func aFloodOnOneTenantsAppLeavesAnotherTenantAndItsOwnSignedNewsAnswered() async throws {
        let clock = LockedBox(Date())
        let harness = try await HuaweiAppGalleryHarness.start(clock: clock) { configuration in
            configuration.notificationReads.atOnce = 2
            configuration.notificationReads.perAppPerMinute = 5
            // The held re-reads end when the test releases them, however loaded the machine, not at a timeout.
            configuration.notificationReads.timeout = .seconds(120)
        }
        defer { harness.stop() }
        let tenantB = try await harness.addTenant(
            name: "Tenant B", gameID: 43, appID: Self.appB, secret: Self.secretB, package: Self.packageB)
        try harness.huawei.addProduct(
            token: "tok.b.refund", productID: "no.ads", orderID: "order.b.refund", kind: 1, package: Self.packageB)
        let verified = try await tenantB.post(
            "/v1/verify", json: ["store": "huawei_appgallery", "receipt": "tok.b.refund", "product_id": "no.ads"])
        #expect(verified.status == 200, "\(verified.text)")
        try harness.huawei.addProduct(
            token: "tok.b.refund", productID: "no.ads", orderID: "order.b.refund", kind: 1, state: 2,
            package: Self.packageB)
        try harness.huawei.addSubscription(token: "tok.a.sub", subscriptionID: "sub.a")

        // Tenant A's public app id is flooded with made-up tokens Huawei is slow to answer: A's
        // share of re-reads is taken, and A's next made-up one is answered 503 at once.
        harness.huawei.hold(tokensStartingWith: "tok.flood.")
        let before = harness.huawei.hits("verify")
        let bodies = try (0..<2).map { _ in try Self.madeUp() }
        let port = harness.service.port
        let flood = bodies.map { body in
            Task {
                let response = try? await RawHTTP.request(
                    port: port, method: "POST", path: "/v1/notifications/huawei-appgallery",
                    headers: ["Content-Type": "application/json"], body: body)
                return response.map(Self.outcome) ?? "no answer"
            }
        }
        #expect(await eventually(within: .seconds(60)) { harness.huawei.hits("verify") == before + 2 })
        #expect(Self.outcome(try await harness.notify(try Self.madeUp())) == "503")
        // Meanwhile tenant B's genuine refund is applied, and A's own signed news is recorded.
        let refundB = try await harness.notify(
            try FakeHuawei.orderNotification(
                type: 2, token: "tok.b.refund", productID: "no.ads",
                applicationID: Self.appB))
        #expect(Self.outcome(refundB) == "accepted", "\(refundB.text)")
        #expect(try refundB.json()["duplicate"] as? Bool == false, "\(refundB.text)")
        #expect(try await harness.state("order.b.refund") == "refunded")
        let renewal = try harness.huawei.subscriptionNotification([
            "notificationType": 2, "subscriptionId": "sub.a", "purchaseToken": "tok.a.sub",
        ])
        let renewed = try await harness.notify(renewal)
        #expect(Self.outcome(renewed) == "accepted", "\(renewed.text)")
        harness.huawei.releaseHeld()
        for task in flood { #expect(await task.value == "ignored") }

        // A's allowance for order notifications spent (2 of 5 above; the provider's clock stands
        // still): made-up tokens are answered 503 without asking Huawei...
        var spent: [String] = []
        for _ in 0..<4 { spent.append(Self.outcome(try await harness.notify(try Self.madeUp()))) }
        #expect(spent == ["ignored", "ignored", "ignored", "503"], "\(spent)")
        // ...and A's signed news, which only Huawei makes, is still read and recorded.
        let recurring = try harness.huawei.subscriptionNotification([
            "notificationType": 7, "subscriptionId": "sub.a", "purchaseToken": "tok.a.sub",
        ])
        let recurred = try await harness.notify(recurring)
        #expect(Self.outcome(recurred) == "accepted", "\(recurred.text)")
        // Kept: B's refund and A's two subscription events; nothing for the made-up tokens.
        #expect(
            try await harness.count("SELECT count(*) AS n FROM store_notifications WHERE store = 'huawei_appgallery'")
                == 3)
    }

    /// A buyer who knows their own token posts REFUND_SUCCESS before Huawei refunds; Huawei then
    /// refunds and pushes its own within the unsettled memory's lifetime (30 s).
    @Test func aForgedRefundBeforeHuaweisDoesNotHideIt() async throws {
        let clock = LockedBox(Date())
        let harness = try await HuaweiAppGalleryHarness.start(clock: clock)
        defer { harness.stop() }
        try harness.huawei.addProduct(
            token: "tok.e2e.forged", productID: "no.ads", orderID: "order.e2e.forged", kind: 1)
        #expect(try await harness.verify("tok.e2e.forged", product: "no.ads").status == 200)
        let refund = try FakeHuawei.orderNotification(type: 2, token: "tok.e2e.forged", productID: "no.ads")
        // Huawei reads it purchased: nothing kept, and 503 (Huawei's own is sent again until backed).
        let forged = try await harness.notify(refund)
        #expect(forged.status == 503, "\(forged.text)")
        #expect(try await harness.state("order.e2e.forged") == "active")
        try harness.huawei.addProduct(
            token: "tok.e2e.forged", productID: "no.ads", orderID: "order.e2e.forged", kind: 1, state: 2)
        clock.update { $0 += 10 }
        let genuine = try await harness.notify(refund)
        #expect(Self.outcome(genuine) == "accepted", "\(genuine.text)")
        #expect(try genuine.json()["duplicate"] as? Bool == false, "\(genuine.text)")
        #expect(try await harness.state("order.e2e.forged") == "refunded")
        try await WebhookDelivery.waitUntil {
            harness.receiver.received.get().contains { $0.body["type"] as? String == "transaction.refunded" }
        }
        #expect(
            try await harness.count("SELECT count(*) AS n FROM outbox WHERE event_type = 'transaction.refunded'") == 1)
    }

    /// One caller address may post 600 notifications a minute; an app's order notifications may
    /// ask Huawei far fewer times, so one caller alone cannot spend much of an app's Huawei quota.
    @Test func anAppsAllowanceForOrderNotificationsIsWellUnderWhatOneCallerMaySend() {
        let reads = HuaweiAppGalleryConfiguration().notificationReads
        let perCaller = NotificationRoutes.perAddress(.huaweiAppGallery)
        #expect(perCaller.window == .seconds(60))
        #expect(
            reads.perAppPerMinute * 4 <= perCaller.limit,
            "\(reads.perAppPerMinute) a minute against \(perCaller.limit) a caller")
    }
}
