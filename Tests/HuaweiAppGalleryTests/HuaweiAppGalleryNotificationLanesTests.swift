import Foundation
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import ReceiptCore
import TestSupport
import Testing

/// What made-up order notifications cannot take from genuine ones: another tenant's re-reads, the
/// same app's signed events, or Huawei's own refund push that a forged one came before.
@Suite struct HuaweiAppGalleryNotificationLanes {
    typealias Gate = HuaweiAppGalleryNotificationGate

    /// Tenant A is the fake's own app; tenant B another client's app at the same Huawei.
    struct Tenants: Sendable {
        static let appB = "107000222"
        static let secretB = "tenant-b-secret-0f1e2d3c4b5a69788796a5b4c3d2e1f0"
        static let packageB = "com.example.tenant.b"

        let provider: HuaweiAppGalleryProvider
        let a: ClientWithStoreCredentials
        let b: ClientWithStoreCredentials

        init(_ huawei: FakeHuawei, provider: HuaweiAppGalleryProvider) throws {
            huawei.addApp(id: Self.appB, secret: Self.secretB)
            self.provider = provider
            a = ClientWithStoreCredentials(
                client: try HuaweiAppGalleryVerify.client(huawei), credentials: try huawei.clientSettings().credentials)
            let settings = [
                HuaweiAppGalleryProvider.Setting.appID: [Self.appB],
                HuaweiAppGalleryProvider.Setting.iapPublicKey: [try huawei.publicKeyBase64],
            ]
            b = ClientWithStoreCredentials(
                client: ClientInfo(
                    clientID: "rgc_tenant_b", gameID: 43,
                    appIdentifiers: [HuaweiAppGalleryProvider.packageNameKind.name: [Self.packageB]],
                    environments: [.production, .sandbox], settings: settings),
                credentials: [HuaweiAppGalleryProvider.Setting.appSecret: Self.secretB])
        }

        /// "recorded <type> <event kind>", or the rejection's kind and reason.
        func outcome(_ body: Data) async -> String {
            let (a, b) = (a, b)
            let request = NotificationRequest(
                body: body,
                ownerBySetting: { name, value in
                    guard name == HuaweiAppGalleryProvider.Setting.appID else { return nil }
                    return value == FakeHuawei.appID ? a : value == Self.appB ? b : nil
                })
            let registered = RegisteredApps(
                appIdentifiers: [FakeHuawei.package, Self.packageB], environments: [.production, .sandbox])
            do {
                let notification = try await provider.receiveNotification(request, registered: registered)
                return "recorded \(notification.type) \(notification.event.kind)"
            } catch let rejection as NotificationRejection {
                return "\(rejection.kind) \(rejection.reason)"
            } catch { return "error \(error)" }
        }
    }

    @Test func floodingOneAppLeavesAnotherAppAndItsOwnSignedNewsAnswered() async throws {
        let huawei = try FakeHuawei()
        // The held re-reads end when the test releases them, however loaded the machine, not at a timeout.
        let provider = Gate.provider(huawei, clock: LockedBox(Date())) {
            $0.atOnce = 2; $0.perAppPerMinute = 5; $0.timeout = .seconds(120)
        }
        let tenants = try Tenants(huawei, provider: provider)
        try huawei.addProduct(
            token: "tok.b.refund", productID: "no.ads", orderID: "order.b.refund", kind: 1, state: 2,
            package: Tenants.packageB)
        try huawei.addSubscription(token: "tok.a.sub", subscriptionID: "sub.a")

        // Tenant A's app id is flooded with made-up tokens that Huawei is slow to answer: A's
        // share of re-reads is taken, and A's next made-up one is refused at once.
        huawei.hold(tokensStartingWith: "tok.madeup.")
        let bodies = try (0..<2).map { _ in try Gate.madeUp() }
        let held = bodies.map { body in Task { await tenants.outcome(body) } }
        #expect(await eventually(within: .seconds(60)) { huawei.hits("verify") == 2 })
        #expect(await tenants.outcome(try Gate.madeUp()) == "retryable HUAWEI_READS_BUSY")
        // Meanwhile tenant B's genuine refund and A's own signed news are answered as ever.
        let refundB = try FakeHuawei.orderNotification(
            type: 2, token: "tok.b.refund", productID: "no.ads", applicationID: Tenants.appB)
        #expect(await tenants.outcome(refundB) == "recorded REFUND_SUCCESS refunded")
        let renewal = try huawei.subscriptionNotification([
            "notificationType": 2, "subscriptionId": "sub.a", "purchaseToken": "tok.a.sub",
        ])
        #expect(await tenants.outcome(renewal) == "recorded RENEWAL renewed")
        huawei.releaseHeld()
        for task in held {
            // Released, a made-up token ends ignored; on a loaded machine its re-read may have been
            // refused for now instead (Huawei would send it again). Never recorded either way.
            let outcome = await task.value
            #expect(outcome == "ignored PURCHASE_UNKNOWN" || outcome.hasPrefix("retryable "), "\(outcome)")
        }

        // A's allowance for order notifications is spent (2 of 5 above; the clock stands still):
        // the next made-up token is refused without asking Huawei...
        var spent: [String] = []
        for _ in 0..<4 { spent.append(await tenants.outcome(try Gate.madeUp())) }
        #expect(
            spent == Array(repeating: "ignored PURCHASE_UNKNOWN", count: 3) + ["retryable HUAWEI_READ_BUDGET_SPENT"],
            "\(spent)")
        let asked = huawei.hits("verify")
        #expect(await tenants.outcome(try Gate.madeUp()) == "retryable HUAWEI_READ_BUDGET_SPENT")
        #expect(huawei.hits("verify") == asked)
        // ...while A's signed news, which only Huawei makes, and B's order news still are read.
        let recurring = try huawei.subscriptionNotification([
            "notificationType": 7, "subscriptionId": "sub.a", "purchaseToken": "tok.a.sub",
        ])
        #expect(await tenants.outcome(recurring) == "recorded RENEWAL_RECURRING renewed")
        try huawei.addProduct(token: "tok.b.paid", orderID: "order.b.paid", package: Tenants.packageB)
        let paidB = try FakeHuawei.orderNotification(type: 1, token: "tok.b.paid", applicationID: Tenants.appB)
        #expect(await tenants.outcome(paidB) == "recorded PAYMENT_SUCCESS oneTimeCharge")
        #expect(huawei.hits("subscription") == 2)
        await huawei.shutdown()
    }

    /// A buyer who knows their own token claims a refund before Huawei makes it; Huawei then
    /// refunds and pushes its own notification within the unsettled memory's lifetime (30 s): the
    /// refund is applied.
    @Test func aForgedRefundDoesNotHideHuaweisGenuineOne() async throws {
        let huawei = try FakeHuawei()
        let clock = LockedBox(Date())
        let provider = Gate.provider(huawei, clock: clock)
        try huawei.addProduct(token: "tok.forged.refund", productID: "no.ads", orderID: "order.forged.refund", kind: 1)
        // The payment, settled: it answers a payment sent again, never a refund.
        let paid = try FakeHuawei.orderNotification(type: 1, token: "tok.forged.refund", productID: "no.ads")
        #expect(await Gate.outcome(provider, huawei, paid) == "recorded PAYMENT_SUCCESS")
        let refund = try FakeHuawei.orderNotification(type: 2, token: "tok.forged.refund", productID: "no.ads")
        // The forged refund: Huawei reads the purchase as purchased. Nothing is kept, and the
        // answer asks for the notification again (Huawei's own is sent again until it is backed).
        #expect(await Gate.outcome(provider, huawei, refund) == "retryable REFUND_NOT_SHOWN")
        #expect(huawei.hits("verify") == 2)
        // Huawei refunds; its push arrives ten seconds later.
        try huawei.addProduct(
            token: "tok.forged.refund", productID: "no.ads", orderID: "order.forged.refund", kind: 1, state: 2)
        clock.update { $0 += 10 }
        let genuine = try await Gate.receive(provider, huawei, refund)
        #expect(
            genuine.type == "REFUND_SUCCESS" && genuine.event.kind == .refunded, "\(genuine.type) \(genuine.event.kind)"
        )
        #expect(genuine.event.purchase?.transactionID == "order.forged.refund")
        #expect(huawei.hits("verify") == 3)
        // Backed now, so settled: sent again, it is answered from memory.
        #expect(try await Gate.receive(provider, huawei, refund).notificationID == genuine.notificationID)
        #expect(huawei.hits("verify") == 3)
        await huawei.shutdown()
    }

    /// The gate on its own: an answer nobody settled answers no later ask; a settled one does.
    @Test func onlyASettledAnswerAnswersFromMemory() async throws {
        let gate = HuaweiNotificationReadGate(limits: .init())
        let reads = LockedBox(0)
        let read: @Sendable () async -> HuaweiNotificationReadGate.Outcome = {
            reads.update { $0 += 1 }
            return .success(nil)
        }
        #expect(try await gate.purchase(key: "k", app: "1", read: read) == nil)
        #expect(try await gate.purchase(key: "k", app: "1", read: read) == nil)
        #expect(reads.get() == 2, "an answer that did not settle its notification was reused")
        await gate.settle("k")
        #expect(try await gate.purchase(key: "k", app: "1", read: read) == nil)
        #expect(reads.get() == 2)
    }

    /// The gate on its own: a remembered outcome answers until its lifetime ends by the gate's
    /// clock, a final refusal for `outcomeLifetime`, a settled answer likewise; then Huawei is asked again.
    @Test func aRememberedOutcomeExpiresByTheInjectedClock() async throws {
        var limits = HuaweiAppGalleryConfiguration.NotificationReads()
        limits.outcomeLifetime = .seconds(600)
        let clock = LockedBox(Date(timeIntervalSince1970: 1_800_000_000))
        let gate = HuaweiNotificationReadGate(limits: limits, now: { clock.get() })
        let reads = LockedBox(0)
        let forged: @Sendable () async -> HuaweiNotificationReadGate.Outcome = {
            reads.update { $0 += 1 }
            return .failure(NotificationRejection(.forged, reason: "INVALID_SIGNATURE", message: "not Huawei's"))
        }
        for _ in 0..<2 {
            await #expect(throws: NotificationRejection.self) {
                try await gate.purchase(key: "f", app: "1", read: forged)
            }
        }
        #expect(reads.get() == 1, "a final refusal answers from memory")
        clock.set(clock.get().addingTimeInterval(601))
        await #expect(throws: NotificationRejection.self) { try await gate.purchase(key: "f", app: "1", read: forged) }
        #expect(reads.get() == 2, "a refusal past its lifetime was still answered from memory")

        let nothing: @Sendable () async -> HuaweiNotificationReadGate.Outcome = {
            reads.update { $0 += 1 }
            return .success(nil)
        }
        #expect(try await gate.purchase(key: "s", app: "1", read: nothing) == nil)
        await gate.settle("s")
        clock.set(clock.get().addingTimeInterval(599))
        #expect(try await gate.purchase(key: "s", app: "1", read: nothing) == nil)
        #expect(reads.get() == 3, "a settled answer answers within its lifetime")
        clock.set(clock.get().addingTimeInterval(2))
        #expect(try await gate.purchase(key: "s", app: "1", read: nothing) == nil)
        #expect(reads.get() == 4, "a settled answer past its lifetime was still answered from memory")
    }

    /// The gate on its own: one app's re-reads running do not count against another app's.
    @Test func oneAppsReadsRunningLeaveAnotherAppsShareFree() async throws {
        var limits = HuaweiAppGalleryConfiguration.NotificationReads()
        limits.atOnce = 1
        let gate = HuaweiNotificationReadGate(limits: limits)
        let released = Latch(), reads = LockedBox(0)
        let held: @Sendable () async -> HuaweiNotificationReadGate.Outcome = {
            reads.update { $0 += 1 }
            await released.wait()
            return .success(nil)
        }
        let quick: @Sendable () async -> HuaweiNotificationReadGate.Outcome = { .success(nil) }
        let a = Task { try await gate.purchase(key: "a1", app: "A", read: held) }
        #expect(await eventually(within: .seconds(60)) { reads.get() == 1 })
        await #expect { try await gate.purchase(key: "a2", app: "A", read: quick) } throws: { error in
            (error as? NotificationRejection)?.reason == "HUAWEI_READS_BUSY"
        }
        #expect(try await gate.purchase(key: "b1", app: "B", read: quick) == nil)
        await released.open()
        #expect(try await a.value == nil)
        #expect(try await gate.purchase(key: "a2", app: "A", read: quick) == nil)
    }

    /// Each lane spends its own allowance: a signed gate counts `signedPerAppPerMinute`.
    @Test func aSignedGateSpendsItsOwnAllowance() async throws {
        var limits = HuaweiAppGalleryConfiguration.NotificationReads()
        limits.perAppPerMinute = 1
        limits.signedPerAppPerMinute = 3
        let now = Date()
        let signed = HuaweiNotificationReadGate(limits: limits, lane: .signed, now: { now })
        let read: @Sendable () async -> HuaweiNotificationReadGate.Outcome = { .success(nil) }
        for key in ["s1", "s2", "s3"] { #expect(try await signed.purchase(key: key, app: "A", read: read) == nil) }
        await #expect { try await signed.purchase(key: "s4", app: "A", read: read) } throws: { error in
            (error as? NotificationRejection)?.reason == "HUAWEI_READ_BUDGET_SPENT"
        }
    }
}
