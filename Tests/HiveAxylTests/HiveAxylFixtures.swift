import AppStore
import Foundation
import GooglePlay
import HiveAxyl
import PluginTestSupport
import ReceiptCore

/// A fake core with what the Hive Axyl tests need: one game client with an app id and a secret,
/// a consumable, a subscription and a few refusals the fake store knows.
enum Fixture {
    static let secret = "rgs_test-secret"
    static let client = ClientInfo(
        clientID: "rgc_hive", gameID: 42,
        appIdentifiers: [
            AppStoreProvider.bundleIDKind.name: ["com.example.game"],
            GooglePlayProvider.packageNameKind.name: ["com.example.game"],
        ],
        environments: [.production, .sandbox],
        settings: [HiveAxyl.appIDsSetting: ["com.example.game.hive"]])
    static let rival = ClientInfo(
        clientID: "rgc_rival", gameID: 7, appIdentifiers: [AppStoreProvider.bundleIDKind.name: ["com.example.game"]],
        environments: [.production, .sandbox],
        settings: [HiveAxyl.appIDsSetting: ["rival.app"]])
    static let purchaseDate = Date(timeIntervalSince1970: 1_780_000_000)

    static func core() -> FakeCore {
        let core = FakeCore()
        core.clients = [client, rival]
        core.clientSecrets = [client.clientID: secret, rival.clientID: "rgs_rival"]
        core.add(
            evidence: "jws-gems", proves: consumable("2000000000000001", token: "5f1d4c39-0000-4000-8000-000000000001"))
        core.add(evidence: "jws-no-token", proves: consumable("2000000000000002", token: nil))
        var production = consumable("2000000000000003", token: nil)
        production.environment = .production
        core.add(evidence: "jws-production", proves: production)
        var refunded = consumable("2000000000000004", token: nil)
        refunded.revocationDate = purchaseDate.addingTimeInterval(3600)
        refunded.revocationReason = "refunded_due_to_issue"
        core.add(evidence: "jws-refunded", proves: refunded)
        core.add(evidence: "jws-vip", proves: subscription("2000000000000101"))
        core.add(
            evidence: "forged",
            refusedWith: StoreVerificationError(
                code: .verificationFailed, reason: "SIGNATURE_INVALID", message: "bad signature"))
        core.add(
            evidence: "jws-down",
            refusedWith: StoreVerificationError(
                code: .verifierError, reason: "APPLE_UNREACHABLE", message: "timeout",
                isRetryable: true))
        return core
    }

    static func consumable(_ id: String, token: String?) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(store: .appStore, environment: .sandbox, transactionID: id)
        purchase.originalTransactionID = id
        purchase.productID = "gems100"
        purchase.kind = .consumable
        purchase.quantity = 2
        purchase.priceMilliunits = 990
        purchase.currency = "USD"
        purchase.purchaseDate = purchaseDate
        purchase.accountToken = token
        return purchase
    }

    static func subscription(_ id: String) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(store: .appStore, environment: .sandbox, transactionID: id)
        purchase.originalTransactionID = id
        purchase.productID = "vip.monthly"
        purchase.kind = .autoRenewableSubscription
        purchase.purchaseDate = purchaseDate
        purchase.expiresDate = Date().addingTimeInterval(30 * 86_400)
        return purchase
    }

    static func token(_ core: FakeCore, for client: ClientInfo = client) async throws -> String {
        try await core.tokens.issue(
            TokenRequest(kind: HiveAxyl.tokenKind, clientID: client.clientID, lifetime: .seconds(3600))
        ).token
    }

    static func headers(_ token: String, appID: String? = "com.example.game.hive") -> [String: String] {
        var headers = ["authorization": "Bearer \(token)", "content-type": "application/json"]
        if let appID { headers["x-app-id"] = appID }
        return headers
    }

    static func purchaseBody(
        _ receipt: String = "jws-gems", productID: String = "gems100",
        account: String = "5F1D4C39-0000-4000-8000-000000000001",
        requestType: any Sendable = 1
    ) -> [String: any Sendable] {
        [
            "providerId": "APPLE", "axylReceipt": receipt, "productId": productID, "accountUuid": account,
            "requestType": requestType,
        ]
    }

    static func subscriptionBody(
        _ receipt: String = "jws-vip", country: String = "KR", language: String = "ko"
    ) -> [String: any Sendable] {
        [
            "providerId": "APPLE", "axylReceipt": receipt, "accountUuid": "acc-1", "country": country,
            "language": language, "requestType": 1,
        ]
    }
}

extension FakeCore {
    func verify(
        _ path: String, _ body: [String: any Sendable], dialect: some DialectProvider = HiveAxyl(), token: String,
        appID: String? = "com.example.game.hive"
    ) async throws -> RouteResponse {
        await call(
            dialect, "POST", path, body: try JSONSerialization.data(withJSONObject: body),
            headers: Fixture.headers(token, appID: appID))
    }
}

extension RouteResponse {
    var result: [String: Any] { object["result"] as? [String: Any] ?? [:] }
    var code: Int? { result["code"] as? Int }
    var message: String { result["message"] as? String ?? "" }
    var data: [String: Any]? { object["data"] as? [String: Any] }
}

/// The fake core, plus a subscription ledger a test fills (as store notifications would):
/// the fake core itself keeps none. Routes are built on this core whatever core calls them.
final class SubscriptionLedgerCore: DialectCore, @unchecked Sendable {
    let base: FakeCore
    var subscriptions: [String: SubscriptionState] = [:]

    init(base: FakeCore) { self.base = base }

    var stores: [StoreDeclaration] { base.stores }
    var now: @Sendable () -> Date { base.now }
    func declaration(of store: StoreID) -> StoreDeclaration? { base.declaration(of: store) }
    func prove(_ request: VerificationRequest, client: ClientInfo) async throws -> ProvenPurchase {
        try await base.prove(request, client: client)
    }
    func record<T: Sendable>(
        _ proven: ProvenPurchase, client: ClientInfo,
        effects: @escaping @Sendable (VerificationOutcome, any RecordScope) throws -> T
    ) async throws -> (VerificationOutcome, T) {
        try await base.record(proven, client: client, effects: effects)
    }
    func lookUpOrder(
        _ orderID: String, store: StoreID, client: ClientInfo
    ) async throws -> (order: StoreOrder, ledger: [String: LedgerPresence]) {
        try await base.lookUpOrder(orderID, store: store, client: client)
    }
    func transaction(store: StoreID, transactionID: String, client: ClientInfo) async throws -> TransactionRecord? {
        try await base.transaction(store: store, transactionID: transactionID, client: client)
    }
    func subscription(
        store: StoreID, originalTransactionID: String, client: ClientInfo
    ) async throws -> SubscriptionState? {
        subscriptions[originalTransactionID]
    }
    func authenticateClient(id: String, secret: String) async throws -> ClientInfo? {
        try await base.authenticateClient(id: id, secret: secret)
    }
    func client(forAppIdentifier identifier: String, store: StoreID) async throws -> ClientInfo? {
        try await base.client(forAppIdentifier: identifier, store: store)
    }
    func checkRateLimit(_ policy: RateLimitPolicy, key: String) async throws {
        try await base.checkRateLimit(policy, key: key)
    }
    func forgiveRateLimitHit(_ policy: RateLimitPolicy, key: String) async throws {
        try await base.forgiveRateLimitHit(policy, key: key)
    }
    var tokens: any TokenStore { base.tokens }
    var accounts: any AccountStore { base.accounts }
    var replayGuard: any ReplayGuard { base.replayGuard }
}

/// HiveAxyl with its routes bound to `core` (FakeCore.call hands routes the fake core itself).
struct HiveAxylOn: DialectProvider {
    let core: any DialectCore
    var name: String { "hive-axyl" }
    func routes(core _: any DialectCore) -> [Route] { HiveAxyl().routes(core: core) }
    func render(_ refusal: RouteRefusal) -> RouteResponse { HiveAxyl().render(refusal) }
}
