import Foundation
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

/// What an unauthenticated sender of notifications can make us ask Huawei: order notifications
/// are unsigned, so re-reads are remembered, capped at once and budgeted per app, and a made-up
/// token is recorded nowhere.
@Suite struct HuaweiAppGalleryNotificationGate {
    static func provider(
        _ huawei: FakeHuawei, clock: LockedBox<Date>,
        _ adjust: (inout HuaweiAppGalleryConfiguration.NotificationReads) -> Void = { _ in }
    ) -> HuaweiAppGalleryProvider {
        var configuration = huawei.configuration()
        adjust(&configuration.notificationReads)
        return HuaweiAppGalleryProvider(
            configuration: configuration, http: FakeHuawei.http(), logger: Logger(minimumLevel: .error),
            now: { clock.get() })
    }

    static func receive(
        _ provider: HuaweiAppGalleryProvider, _ huawei: FakeHuawei, _ body: Data
    ) async throws -> StoreNotification {
        try await provider.receiveNotification(
            try HuaweiAppGalleryNotifications.request(huawei, body: body),
            registered: HuaweiAppGalleryNotifications.registered)
    }

    /// How a notification ended: its type when it was to be recorded, else the rejection's kind and reason.
    static func outcome(_ provider: HuaweiAppGalleryProvider, _ huawei: FakeHuawei, _ body: Data) async -> String {
        do { return "recorded \(try await receive(provider, huawei, body).type)" } catch let rejection
            as NotificationRejection
        {
            return "\(rejection.kind) \(rejection.reason)"
        } catch { return "error \(error)" }
    }

    static func madeUp(type: Int = 2) throws -> Data {
        try FakeHuawei.orderNotification(type: type, token: "tok.madeup." + Hex.encode(SecureRandom.bytes(8)))
    }

    @Test func madeUpTokensAreRecordedNowhereAndAskHuaweiNoMoreThanTheAppsBudget() async throws {
        let huawei = try FakeHuawei()
        let clock = LockedBox(Date())
        let provider = Self.provider(huawei, clock: clock) { $0.perAppPerMinute = 5 }
        var outcomes: [String] = []
        for _ in 0..<12 { outcomes.append(await Self.outcome(provider, huawei, try Self.madeUp())) }
        #expect(outcomes.prefix(5).allSatisfy { $0 == "ignored PURCHASE_UNKNOWN" }, "\(outcomes)")
        #expect(outcomes.dropFirst(5).allSatisfy { $0 == "retryable HUAWEI_READ_BUDGET_SPENT" }, "\(outcomes)")
        #expect(huawei.hits("verify") == 5)
        // The bucket refills evenly: a minute later the budget is whole again.
        clock.update { $0 += 60 }
        #expect(await Self.outcome(provider, huawei, try Self.madeUp()) == "ignored PURCHASE_UNKNOWN")
        #expect(huawei.hits("verify") == 6)
        await huawei.shutdown()
    }

    @Test func theSameNotificationTwiceAsksHuaweiOnce() async throws {
        let huawei = try FakeHuawei()
        let provider = Self.provider(huawei, clock: LockedBox(Date()))
        try huawei.addProduct(token: "tok.gate.paid", orderID: "order.gate.paid")
        let paid = try FakeHuawei.orderNotification(type: 1, token: "tok.gate.paid")
        let first = try await Self.receive(provider, huawei, paid)
        let second = try await Self.receive(provider, huawei, paid)
        #expect(first.type == "PAYMENT_SUCCESS" && first.event.kind == .oneTimeCharge)
        #expect(
            second.notificationID == first.notificationID && second.event.purchase?.transactionID == "order.gate.paid")
        #expect(huawei.hits("verify") == 1)
        // A made-up token sent twice: one question too.
        let madeUp = try Self.madeUp()
        #expect(await Self.outcome(provider, huawei, madeUp) == "ignored PURCHASE_UNKNOWN")
        #expect(await Self.outcome(provider, huawei, madeUp) == "ignored PURCHASE_UNKNOWN")
        #expect(huawei.hits("verify") == 2)
        // A signed subscription event replayed: one question.
        try huawei.addSubscription(token: "tok.gate.sub", subscriptionID: "sub.gate")
        let renewal = try huawei.subscriptionNotification([
            "notificationType": 2, "subscriptionId": "sub.gate", "purchaseToken": "tok.gate.sub",
        ])
        for _ in 0..<3 { #expect(try await Self.receive(provider, huawei, renewal).type == "RENEWAL") }
        #expect(huawei.hits("subscription") == 1)
        await huawei.shutdown()
    }

    @Test func huaweiUnreachableIsRememberedBrieflyThenAskedAgain() async throws {
        let huawei = try FakeHuawei()
        let clock = LockedBox(Date())
        let provider = Self.provider(huawei, clock: clock)
        try huawei.addProduct(token: "tok.gate.later", orderID: "order.gate.later")
        let paid = try FakeHuawei.orderNotification(type: 1, token: "tok.gate.later")
        huawei.failFirst("verify", [503])
        let before = huawei.hits("verify")
        #expect(await Self.outcome(provider, huawei, paid) == "retryable HUAWEI_UNAVAILABLE")
        // One attempt (no retries on the notifications' client), then answered from memory.
        #expect(await Self.outcome(provider, huawei, paid) == "retryable HUAWEI_UNAVAILABLE")
        #expect(huawei.hits("verify") == before + 1)
        clock.update { $0 += 31 }
        #expect(await Self.outcome(provider, huawei, paid) == "recorded PAYMENT_SUCCESS")
        #expect(huawei.hits("verify") == before + 2)
        await huawei.shutdown()
    }

    @Test func aRefusedAppSecretIsRememberedNotExchangedPerNotification() async throws {
        let huawei = try FakeHuawei()
        let clock = LockedBox(Date())
        let provider = Self.provider(huawei, clock: clock)
        let owner = ClientWithStoreCredentials(
            client: try HuaweiAppGalleryVerify.client(huawei),
            credentials: [HuaweiAppGalleryProvider.Setting.appSecret: "a-wrong-secret"])
        func post(_ body: Data) async -> String {
            let request = NotificationRequest(
                body: body, ownerBySetting: { _, value in value == FakeHuawei.appID ? owner : nil })
            do {
                _ = try await provider.receiveNotification(
                    request, registered: HuaweiAppGalleryNotifications.registered);
                return "recorded"
            } catch let rejection as NotificationRejection {
                return "\(rejection.kind) \(rejection.reason)"
            } catch { return "error \(error)" }
        }
        for _ in 0..<6 { #expect(await post(try Self.madeUp()) == "retryable HUAWEI_PERMISSION_DENIED") }
        #expect(huawei.hits("token") == 1)
        #expect(huawei.hits("verify") == 0)
        clock.update { $0 += 31 }
        _ = await post(try Self.madeUp())
        #expect(huawei.hits("token") == 2)
        await huawei.shutdown()
    }

    @Test func anUnknownApplicationIsLookedUpByItsSettingOnly() async throws {
        let huawei = try FakeHuawei()
        let provider = Self.provider(huawei, clock: LockedBox(Date()))
        let byPackage = LockedBox(0), bySetting = LockedBox<[String]>([])
        let request = NotificationRequest(
            body: try JSONSerialization.data(withJSONObject: [
                "applicationId": "999000999",
                "orderNotification": ["notificationType": 1, "purchaseToken": "tok.x", "productId": "gems100"],
            ]),
            owner: { _ in
                byPackage.update { $0 += 1 }; return nil
            },
            ownerBySetting: { name, value in
                bySetting.update { $0.append("\(name)=\(value)") }
                return nil
            })
        let rejection = await HuaweiAppGalleryNotifications.rejection {
            _ = try await provider.receiveNotification(request, registered: HuaweiAppGalleryNotifications.registered)
        }
        #expect(rejection?.kind == .forged && rejection?.reason == "UNKNOWN_APPLICATION")
        #expect(bySetting.get() == ["\(HuaweiAppGalleryProvider.Setting.appID)=999000999"])
        #expect(byPackage.get() == 0, "no client is loaded (and its secrets opened) by package to find the app")
        #expect(huawei.hits("token") == 0 && huawei.hits("verify") == 0)
        await huawei.shutdown()
    }

    @Test func theBoundsComeFromTheEnvironmentAndBadValuesNameTheirVariable() throws {
        let set = try HuaweiAppGalleryConfiguration.fromEnvironment([
            "RECEIPTGATE_HUAWEI_NOTIFICATION_READS_AT_ONCE": "3",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_READS_PER_MINUTE": "120",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_READ_TIMEOUT_SECONDS": "2",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_MEMORY_SECONDS": "60",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_UNSETTLED_MEMORY_SECONDS": "5",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_MEMORY_ENTRIES": "500",
            "RECEIPTGATE_HUAWEI_OAUTH_FAILURE_SECONDS": "10",
            "RECEIPTGATE_HUAWEI_SIGNED_NOTIFICATION_READS_PER_MINUTE": "900",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_READ_THREADS": "6",
        ])
        let reads = set.notificationReads
        #expect(reads.atOnce == 3 && reads.perAppPerMinute == 120 && reads.timeout == .seconds(2))
        #expect(reads.signedPerAppPerMinute == 900 && reads.threads == 6)
        #expect(
            reads.outcomeLifetime == .seconds(60) && reads.unsettledLifetime == .seconds(5)
                && reads.maxRemembered == 500)
        #expect(set.oauthFailureLifetime == 10)
        for name in [
            "RECEIPTGATE_HUAWEI_NOTIFICATION_READS_AT_ONCE", "RECEIPTGATE_HUAWEI_NOTIFICATION_READS_PER_MINUTE",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_READ_TIMEOUT_SECONDS", "RECEIPTGATE_HUAWEI_NOTIFICATION_MEMORY_SECONDS",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_UNSETTLED_MEMORY_SECONDS",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_MEMORY_ENTRIES",
            "RECEIPTGATE_HUAWEI_OAUTH_FAILURE_SECONDS", "RECEIPTGATE_HUAWEI_SIGNED_NOTIFICATION_READS_PER_MINUTE",
            "RECEIPTGATE_HUAWEI_NOTIFICATION_READ_THREADS",
        ] {
            for bad in ["0", "-1", "many", "99999999999"] {
                #expect { _ = try HuaweiAppGalleryConfiguration.fromEnvironment([name: bad]) } throws: { error in
                    (error as? ConfigurationInvalid)?.variable == name
                }
            }
        }
    }

    /// The gate on its own: one app's re-reads past the cap are refused at once, a key being read is awaited.
    @Test func readsPastTheCapAreRefusedAndAKeyBeingReadIsAwaited() async throws {
        var limits = HuaweiAppGalleryConfiguration.NotificationReads()
        limits.atOnce = 2
        let gate = HuaweiNotificationReadGate(limits: limits)
        let released = Latch(), reads = LockedBox(0)
        let read: @Sendable () async -> HuaweiNotificationReadGate.Outcome = {
            reads.update { $0 += 1 }
            await released.wait()
            return .success(nil)
        }
        let a = Task { try await gate.purchase(key: "a", app: "1", read: read) }
        let b = Task { try await gate.purchase(key: "b", app: "1", read: read) }
        // Generous: beside a whole suite on two cores the two tasks may wait long for a thread.
        #expect(await eventually(within: .seconds(90)) { reads.get() == 2 })
        await #expect { try await gate.purchase(key: "c", app: "1", read: read) } throws: { error in
            (error as? NotificationRejection)?.kind == .retryable
                && (error as? NotificationRejection)?.reason == "HUAWEI_READS_BUSY"
        }
        let joined = Task { try await gate.purchase(key: "a", app: "1", read: read) }
        // Released only once the second ask waits for the read running: an answer nobody settled
        // answers no ask that comes after it.
        #expect(await eventually(within: .seconds(90)) { await gate.joined == 1 })
        await released.open()
        for task in [a, b, joined] { #expect(try await task.value == nil) }
        #expect(reads.get() == 2, "the second ask for a waited for the read running")
        #expect(try await gate.purchase(key: "c", app: "1", read: read) == nil)
        #expect(await gate.started == 3)
    }
}
