import AmazonAppstore
import AmazonAppstoreTestSupport
import Foundation
import HTTPClient
import ReceiptCore
import TestSupport
import Testing

/// What an SNS certificate URL can cost, since anyone may post a message naming one the rule
/// allows: a URL that failed is not fetched again for a while, messages naming a URL being
/// fetched share that fetch, and beyond a few fetches at once a message is refused at once.
@Suite struct AmazonAppstoreCertificateFetches {
    typealias Notifications = AmazonAppstoreNotifications

    static func provider(
        _ rvs: FakeRVS, _ sns: FakeSNS, clock: LockedClock? = nil,
        adjust: (inout AmazonAppstoreConfiguration) -> Void = { _ in },
        certificateHTTP: HTTPClient? = nil
    ) throws -> AmazonAppstoreProvider {
        var configuration = rvs.configuration(certURLPattern: sns.certificateURLPattern)
        adjust(&configuration)
        let now: @Sendable () -> Date = { clock?.now ?? Date() }
        return try AmazonAppstoreProvider(
            configuration: configuration, http: FakeRVS.http(), certificateHTTP: certificateHTTP,
            logger: Logger(minimumLevel: .error), now: now)
    }

    /// A pattern-valid certificate URL on the fake's host that it does not serve.
    static func missing(_ sns: FakeSNS, _ hex: String) -> String {
        "http://127.0.0.1:\(sns.server.port)/SimpleNotificationService-\(hex).pem"
    }

    static func deliver(_ body: Data, to provider: AmazonAppstoreProvider) async -> NotificationRejection? {
        await Notifications.rejection {
            _ = try await provider.receiveNotification(
                Notifications.request(body), registered: Notifications.registered)
        }
    }

    @Test func aURLThatFailedIsFetchedOnceUntilItsFailureIsForgotten() async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        let clock = LockedClock(Date())
        let provider = try Self.provider(rvs, sns, clock: clock) { $0.certificateFailureLifetime = .seconds(30) }
        let bad = Self.missing(sns, "0badc0de")
        let body = try sns.notification(Notifications.news("CONSUMABLE_PURCHASED", receipt: "r-1"), certificateURL: bad)
        for _ in 0..<5 {
            let refusal = await Self.deliver(body, to: provider)
            #expect(
                refusal?.kind == .retryable && refusal?.reason == "SNS_CERTIFICATE_UNAVAILABLE",
                "\(String(describing: refusal))")
        }
        #expect(sns.requestedFiles.get() == ["SimpleNotificationService-0badc0de.pem"])
        clock.advance(29)
        _ = await Self.deliver(body, to: provider)
        #expect(sns.requestedFiles.get().count == 1)
        // Past the failure's lifetime the URL is tried again, once.
        clock.advance(2)
        _ = await Self.deliver(body, to: provider)
        _ = await Self.deliver(body, to: provider)
        #expect(sns.requestedFiles.get().count == 2)
        // The genuine certificate is not held back by the failure of another URL.
        let genuine = try sns.subscriptionConfirmation(token: "t")
        #expect(
            try await provider.receiveNotification(Notifications.request(genuine), registered: Notifications.registered)
                .type == "SubscriptionConfirmation")
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test func concurrentMessagesNamingOneURLShareOneFetch() async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        // A slow certificate host: every message arrives while the first fetch is under way.
        sns.answerDelay.set(.seconds(2))
        let provider = try Self.provider(rvs, sns)
        let bodies = try (0..<8).map { try sns.subscriptionConfirmation(token: "t-\($0)", messageID: "confirm-\($0)") }
        let types = await withTaskGroup(of: String?.self) { group in
            for body in bodies {
                group.addTask {
                    try? await provider.receiveNotification(
                        Notifications.request(body), registered: Notifications.registered
                    ).type
                }
            }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(types == Array(repeating: "SubscriptionConfirmation", count: 8))
        #expect(sns.requestedFiles.get().count == 1)
        #expect(sns.certificateHits.get() == 1)
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test func beyondTheFetchBoundAMessageIsRefusedAtOnceAsRetryable() async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        // Fetches that outlast the test unless it lets them go: only the bound can answer the third message.
        var patient = HTTPClient.Configuration()
        patient.retry = .none
        patient.timeout = .seconds(120)
        let provider = try Self.provider(
            rvs, sns, adjust: { $0.maxCertificateFetches = 2 }, certificateHTTP: HTTPClient(patient))
        sns.hold.close()
        let held = try ["0a", "0b"].map {
            try sns.notification(
                Notifications.news("CONSUMABLE_PURCHASED", receipt: "r-1"), certificateURL: Self.missing(sns, $0))
        }
        let first = held.map { body in Task { await Self.deliver(body, to: provider) } }
        #expect(await eventually(within: .seconds(20)) { sns.requestedFiles.get().count == 2 })

        let another = try sns.notification(
            Notifications.news("CONSUMABLE_PURCHASED", receipt: "r-1"), certificateURL: Self.missing(sns, "0c"))
        let refused = Task { await Self.deliver(another, to: provider) }
        let answer = await value(of: refused, within: .seconds(10))
        #expect(
            answer??.kind == .retryable && answer??.reason == "SNS_CERTIFICATE_BUSY", "\(String(describing: answer))")
        // A message naming a URL already being fetched is not refused: it waits for that fetch.
        let sameURL = Task { await Self.deliver(held[0], to: provider) }
        sns.hold.release()
        for task in first + [sameURL] {
            let outcome = await task.value
            #expect(
                outcome?.kind == .retryable && outcome?.reason == "SNS_CERTIFICATE_UNAVAILABLE",
                "\(String(describing: outcome))")
        }
        #expect(Set(sns.requestedFiles.get()).count == sns.requestedFiles.get().count, "each URL fetched once")
        #expect(!sns.requestedFiles.get().contains("SimpleNotificationService-0c.pem"))
        await rvs.shutdown()
        await sns.shutdown()
    }
}
