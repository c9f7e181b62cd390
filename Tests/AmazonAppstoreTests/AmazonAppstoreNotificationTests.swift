import AmazonAppstore
import AmazonAppstoreTestSupport
import Foundation
import ReceiptCore
import Testing

/// Real-Time Notifications over SNS: every message proven (certificate URL, signature v1 and v2),
/// confirmations surfaced, notifications re-read from RVS and applied as RVS reads them.
@Suite struct AmazonAppstoreNotifications {
    static let package = "com.example.game"
    static let user = AmazonAppstoreVerify.user

    static func provider(_ rvs: FakeRVS, _ sns: FakeSNS) throws -> AmazonAppstoreProvider {
        try AmazonAppstoreProvider(
            configuration: rvs.configuration(certURLPattern: sns.certificateURLPattern), http: FakeRVS.http(),
            logger: Logger(minimumLevel: .error))
    }

    static func request(_ body: Data, secret: String? = FakeRVS.sharedSecret) -> NotificationRequest {
        NotificationRequest(body: body, headers: ["content-type": "text/plain; charset=UTF-8"]) { identifier in
            guard identifier == package else { return nil }
            let client = ClientInfo(
                clientID: "rgc_amazon", gameID: 7,
                appIdentifiers: [AmazonAppstoreProvider.packageNameKind.name: [package]],
                environments: [.production, .sandbox])
            return ClientWithStoreCredentials(
                client: client, credentials: secret.map { [AmazonAppstoreProvider.Setting.sharedSecret: $0] } ?? [:])
        }
    }

    static let registered = RegisteredApps(appIdentifiers: [package], environments: [.production, .sandbox])

    static func news(_ type: String, receipt: String, package: String = package) -> [String: Any] {
        [
            "appPackageName": package, "notificationType": type, "appUserId": user, "receiptId": receipt,
            "relatedReceipts": [String: String](),
            "timestamp": 1_764_632_402_000, "betaProductTransaction": false,
        ]
    }

    static func rejection(_ body: () async throws -> Void) async -> NotificationRejection? {
        do { try await body(); return nil } catch let error as NotificationRejection { return error } catch {
            return nil
        }
    }

    @Test(arguments: [1, 2])
    func aSignedNotificationIsReReadFromRVSAndAppliedAsRVSSays(version: Int) async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        try rvs.addReceipt(
            "r-refunded", userID: Self.user, cancelDate: Date(timeIntervalSince1970: 1_716_400_000), cancelReason: 1)
        let body = try sns.notification(
            Self.news("CONSUMABLE_CANCELLED", receipt: "r-refunded"), messageID: "msg-\(version)", version: version)
        let notification = try await Self.provider(rvs, sns).receiveNotification(
            Self.request(body), registered: Self.registered)
        #expect(notification.store == .amazonAppstore)
        #expect(notification.notificationID == "msg-\(version)")
        #expect(notification.type == "CONSUMABLE_CANCELLED")
        #expect(notification.event.kind == .refunded)
        #expect(notification.transactionID == "r-refunded" && notification.appIdentifier == Self.package)
        #expect(notification.event.purchase.map { LedgerRules.state(of: $0, at: Date()) } == .refunded)
        #expect(rvs.hits == ["production"])
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test func aClaimedRefundThatRVSDoesNotShowChangesNothing() async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        try rvs.addReceipt("r-fine", userID: Self.user)
        let body = try sns.notification(Self.news("CONSUMABLE_CANCELLED", receipt: "r-fine"))
        let notification = try await Self.provider(rvs, sns).receiveNotification(
            Self.request(body), registered: Self.registered)
        #expect(notification.type == "CONSUMABLE_CANCELLED_UNCONFIRMED")
        #expect(notification.event.kind == .other)
        #expect(rvs.hits == ["production"])
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test func subscriptionNewsFollowsRVS() async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        let future = Date().addingTimeInterval(30 * 86_400)
        try rvs.addReceipt(
            "sub-live", userID: Self.user, productType: "SUBSCRIPTION", renewalDate: future, autoRenewing: true)
        try rvs.addReceipt(
            "sub-lapsed", userID: Self.user, productType: "SUBSCRIPTION",
            cancelDate: Date(timeIntervalSince1970: 1_716_400_000),
            cancelReason: 2, renewalDate: future)
        let provider = try Self.provider(rvs, sns)
        let renewed = try await provider.receiveNotification(
            Self.request(try sns.notification(Self.news("SUBSCRIPTION_RENEWED", receipt: "sub-live"))),
            registered: Self.registered)
        #expect(
            renewed.event.kind == .renewed
                && renewed.event.purchase?.expiresDate.map { abs($0.timeIntervalSince(future)) < 1 } == true)
        let expired = try await provider.receiveNotification(
            Self.request(try sns.notification(Self.news("SUBSCRIPTION_EXPIRED", receipt: "sub-lapsed"))),
            registered: Self.registered)
        #expect(expired.event.kind == .expired)
        // A claimed expiry of a live subscription is not applied.
        let claimed = try await provider.receiveNotification(
            Self.request(try sns.notification(Self.news("SUBSCRIPTION_EXPIRED", receipt: "sub-live"))),
            registered: Self.registered)
        #expect(claimed.event.kind == .other && claimed.type == "SUBSCRIPTION_EXPIRED_UNCONFIRMED")
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test(arguments: [1, 2])
    func aSubscriptionConfirmationSurfacesItsTokenAndTheCertificateIsFetchedOnce(version: Int) async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        let provider = try Self.provider(rvs, sns)
        for index in 0..<3 {
            let body = try sns.subscriptionConfirmation(
                token: "token-\(index)", messageID: "confirm-\(index)", version: version)
            let notification = try await provider.receiveNotification(Self.request(body), registered: Self.registered)
            #expect(
                notification.type == "SubscriptionConfirmation" && notification.notificationID == "confirm-\(index)")
            let decoded = try #require(
                try JSONSerialization.jsonObject(with: notification.decodedJSON) as? [String: String])
            #expect(decoded["Token"] == "token-\(index)")
            #expect(decoded["TopicArn"] == FakeSNS.topicARN)
            #expect(decoded["SubscribeURL"]?.hasSuffix("Token=token-\(index)") == true)
            #expect(notification.event.kind == .other)
        }
        #expect(sns.certificateHits.get() == 1)
        #expect(rvs.hits.isEmpty)
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test func theCachedCertificateIsFetchedAgainOnceItsLifetimeHasPassed() async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        let clock = LockedClock(Date())
        var configuration = rvs.configuration(certURLPattern: sns.certificateURLPattern)
        configuration.certificateCacheLifetime = .seconds(60)
        let provider = try AmazonAppstoreProvider(
            configuration: configuration, http: FakeRVS.http(), logger: Logger(minimumLevel: .error),
            now: { clock.now })
        let body = try sns.subscriptionConfirmation(token: "t")
        _ = try await provider.receiveNotification(Self.request(body), registered: Self.registered)
        clock.advance(59)
        _ = try await provider.receiveNotification(Self.request(body), registered: Self.registered)
        #expect(sns.certificateHits.get() == 1)
        clock.advance(2)
        _ = try await provider.receiveNotification(Self.request(body), registered: Self.registered)
        #expect(sns.certificateHits.get() == 2)
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test(arguments: [
        ("Message", "{\"appPackageName\":\"com.example.game\",\"receiptId\":\"r-other\",\"appUserId\":\"u\"}"),
        ("Signature", Data(repeating: 7, count: 256).base64EncodedString()), ("MessageId", "msg-replayed"),
        ("Type", "SubscriptionConfirmation"), ("SignatureVersion", "2"),
    ])
    func aTamperedMessageIsRefusedAsForgedBeforeAnythingIsAsked(field: String, value: String) async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        try rvs.addReceipt(
            "r-1", userID: Self.user, cancelDate: Date(timeIntervalSince1970: 1_716_400_000), cancelReason: 1)
        let genuine = try sns.notification(Self.news("CONSUMABLE_CANCELLED", receipt: "r-1"), version: 1)
        let forged = try FakeSNS.tampered(genuine, field, value)
        let provider = try Self.provider(rvs, sns)
        let refusal = await Self.rejection {
            _ = try await provider.receiveNotification(Self.request(forged), registered: Self.registered)
        }
        #expect(refusal?.kind == .forged)
        #expect(rvs.hits.isEmpty)
        // The genuine message still passes: the refusal was the edit's doing.
        #expect(
            try await provider.receiveNotification(Self.request(genuine), registered: Self.registered).event.kind
                == .refunded)
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test(arguments: [
        "http://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123abcd.pem",
        "https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService-0123abcd.pem",
        "https://evil.example/SimpleNotificationService-0123abcd.pem",
        "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123abcd.pem.evil",
        "https://sns.us-east-1.amazonaws.com/evil/SimpleNotificationService-0123abcd.pem",
        "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0123abcd.pem?x=/evil.pem",
        "https://sns.us-east-1.amazonaws.com@evil.example/SimpleNotificationService-0123abcd.pem",
        // S3 bucket hosts: whoever owns a bucket named `sns` serves what they like there.
        "https://sns.s3.amazonaws.com/SimpleNotificationService-0123abcd.pem",
        "https://sns.s3-external-1.amazonaws.com/SimpleNotificationService-0123abcd.pem",
        "https://sns.s3-website-us-east-1.amazonaws.com/SimpleNotificationService-0123abcd.pem",
    ])
    func theDefaultRuleRefusesAForeignSchemeHostOrPath(url: String) async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        let provider = try AmazonAppstoreProvider(
            configuration: rvs.configuration(), http: FakeRVS.http(), logger: Logger(minimumLevel: .error))
        let body = try sns.notification(Self.news("CONSUMABLE_PURCHASED", receipt: "r-1"), certificateURL: url)
        let refusal = await Self.rejection {
            _ = try await provider.receiveNotification(Self.request(body), registered: Self.registered)
        }
        #expect(refusal?.kind == .forged && refusal?.reason == "SNS_CERTIFICATE_URL_REFUSED")
        await rvs.shutdown()
        await sns.shutdown()
    }

    @Test func aCertificateFromAnotherHostOrPathIsNeverFetched() async throws {
        let (rvs, sns, impostor) = (try FakeRVS(), try FakeSNS(), try FakeSNS(key: try TestKeysAccess.unrelated()))
        try rvs.addReceipt(
            "r-1", userID: Self.user, cancelDate: Date(timeIntervalSince1970: 1_716_400_000), cancelReason: 1)
        let provider = try Self.provider(rvs, sns)
        // Signed correctly by the impostor's own key and certificate, on another port (host), then another path.
        let otherHost = try impostor.notification(Self.news("CONSUMABLE_CANCELLED", receipt: "r-1"))
        let otherPath = try impostor.notification(
            Self.news("CONSUMABLE_CANCELLED", receipt: "r-1"),
            certificateURL: "http://127.0.0.1:\(sns.server.port)/keys/\(impostor.certificateFile)")
        for body in [otherHost, otherPath] {
            let refusal = await Self.rejection {
                _ = try await provider.receiveNotification(Self.request(body), registered: Self.registered)
            }
            #expect(refusal?.kind == .forged && refusal?.reason == "SNS_CERTIFICATE_URL_REFUSED")
        }
        #expect(impostor.certificateHits.get() == 0 && sns.certificateHits.get() == 0)
        #expect(rvs.hits.isEmpty)
        await rvs.shutdown()
        await sns.shutdown()
        await impostor.shutdown()
    }

    @Test func anotherAppsNewsIsKeptUnappliedAndAnOwnerWithoutSecretIsRetried() async throws {
        let (rvs, sns) = (try FakeRVS(), try FakeSNS())
        try rvs.addReceipt("r-1", userID: Self.user)
        let provider = try Self.provider(rvs, sns)
        let foreign = try sns.notification(Self.news("CONSUMABLE_PURCHASED", receipt: "r-1", package: "com.other.game"))
        let kept = try await provider.receiveNotification(Self.request(foreign), registered: Self.registered)
        #expect(kept.type == "UNKNOWN_PACKAGE" && kept.event.kind == .other && rvs.hits.isEmpty)
        let ours = try sns.notification(Self.news("CONSUMABLE_PURCHASED", receipt: "r-1"))
        let refusal = await Self.rejection {
            _ = try await provider.receiveNotification(Self.request(ours, secret: nil), registered: Self.registered)
        }
        #expect(refusal?.kind == .retryable)
        #expect(
            try await provider.receiveNotification(Self.request(ours), registered: Self.registered).event.kind
                == .oneTimeCharge)
        await rvs.shutdown()
        await sns.shutdown()
    }
}

/// A clock the test moves by hand.
final class LockedClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    init(_ start: Date) { current = start }
    var now: Date { lock.lock(); defer { lock.unlock() }; return current }
    func advance(_ seconds: TimeInterval) { lock.lock(); current += seconds; lock.unlock() }
}
