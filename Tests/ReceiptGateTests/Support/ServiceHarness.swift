import AppStore
import AppStoreTestSupport
import Foundation
import GooglePlay
import OpenSSLCrypto
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport

/// A game server's view: requests signed exactly as the native API's HMAC scheme describes.
struct SignedClient {
    let port: Int
    let clientID: String
    let secret: String

    func post(
        _ path: String, json: [String: Any], timestamp: Int? = nil, secretOverride: String? = nil,
        version: String = "1",
        signedTarget: String? = nil
    ) async throws -> RawHTTP.Response {
        let body = try JSONSerialization.data(withJSONObject: json)
        return try await post(
            path, body: body, timestamp: timestamp, secretOverride: secretOverride, version: version,
            signedTarget: signedTarget)
    }

    /// Signed with version 2 (method, path and query covered), which GETs require. `signedTarget`
    /// lets a test sign one target and send another.
    func get(_ path: String, signedTarget: String? = nil, version: String = "2") async throws -> RawHTTP.Response {
        let stamp = String(Int(Date().timeIntervalSince1970))
        let message =
            try version == "2"
            ? "v2\n\(clientID)\n\(stamp)\nGET\n\(signedTarget ?? path)\n\(SHA256.hex(Data()))"
            : "\(clientID).\(stamp).\(SHA256.hex(Data()))"
        let signature = Hex.encode(
            try HMACSHA256.authenticationCode(key: Data(secret.utf8), message: Data(message.utf8)))
        var headers = ["X-Client-ID": clientID, "X-Timestamp": stamp, "X-Signature": signature]
        if version == "2" { headers["X-Signature-Version"] = "2" }
        return try await RawHTTP.request(port: port, path: path, headers: headers)
    }

    /// Version 1 (the body only) unless `version` is "2": then method and `signedTarget` (the path
    /// sent, by default) are covered too, as routes with a parameter in their path require.
    func post(
        _ path: String, body: Data, timestamp: Int? = nil, secretOverride: String? = nil, version: String = "1",
        signedTarget: String? = nil
    ) async throws -> RawHTTP.Response {
        let stamp = String(timestamp ?? Int(Date().timeIntervalSince1970))
        let message =
            try version == "2"
            ? "v2\n\(clientID)\n\(stamp)\nPOST\n\(signedTarget ?? path)\n\(SHA256.hex(body))"
            : "\(clientID).\(stamp).\(try SHA256.hex(body))"
        let signature = Hex.encode(
            try HMACSHA256.authenticationCode(key: Data((secretOverride ?? secret).utf8), message: Data(message.utf8)))
        var headers = [
            "Content-Type": "application/json", "X-Client-ID": clientID, "X-Timestamp": stamp, "X-Signature": signature,
        ]
        if version == "2" { headers["X-Signature-Version"] = "2" }
        return try await RawHTTP.request(port: port, method: "POST", path: path, headers: headers, body: body)
    }
}

struct VerifyHarness {
    let service: Service
    let pool: PostgresPool
    let pki: AppleTestPKI
    let client: SignedClient
    /// Everything the service logged; `stop()` scans it for secrets.
    var log = ServerLogCapture()

    /// A running service on a fresh database, trusting `pki` (a new one by default), with one
    /// client for com.example.game; every knob a test needs, in one place.
    static func start(
        environments: [StoreEnvironment] = [.production, .sandbox], gameID: Int64? = 42,
        outbox: OutboxWorker.Configuration? = nil, adminToken: String? = nil, webhookURL: String? = nil,
        deliveryURL: String? = nil, dialects: [any DialectProvider] = [], otherStores: [StoreRegistration] = [],
        pki given: AppleTestPKI? = nil, rateLimits: [String: ServiceConfiguration.RateLimitOverride] = [:],
        appStore: (AppleTestPKI) -> AppStoreConfiguration? = { _ in nil },
        configure: (inout ServiceConfiguration) -> Void = { _ in },
        beforeStart: (Service) -> Void = { _ in }, now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> VerifyHarness {
        let pki = try given ?? AppleTestPKI()
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = try await TestDatabase.makeDatabase(prefix: "service")
        configuration.masterKey = Data(repeating: 6, count: 32)
        configuration.dataDirectory = TestDatabase.temporaryDirectory("service")
        configuration.adminToken = adminToken
        configuration.outboundAllowPrivate = true  // the tests' receivers listen on loopback
        configuration.rateLimits = rateLimits
        configure(&configuration)
        let log = ServerLogCapture()
        let logger = log.logger
        let database = try Database.open(configuration, logger: logger)
        let provider = AppStoreProvider(
            verifier: AppStoreSignedDataVerifier(trustRoots: [pki.root], now: now), configuration: appStore(pki))
        let service = try Service(
            configuration: configuration, logger: logger, database: database,
            stores: [provider.registration] + otherStores,
            dialects: dialects, now: now)
        service.outboxConfiguration = outbox ?? Self.fewSenders(OutboxWorker.Configuration())
        beforeStart(service)
        try await service.start()
        var clientSettings = settings(environments: environments, gameID: gameID)
        clientSettings.webhookURL = webhookURL
        clientSettings.deliveryURL = deliveryURL
        let created = try await service.clients.create(clientSettings)
        return VerifyHarness(
            service: service, pool: database.pool, pki: pki,
            client: SignedClient(port: service.port, clientID: created.client.clientID, secret: created.secret),
            log: log)
    }

    /// For `defer` right after `start`: a test that fails half-way still stops its service.
    /// Shutting down is idempotent, so a test may also await `service.shutdown()` itself.
    /// The service's log so far is scanned for secrets (a find fails the test).
    func stop() {
        log.scan()
        let service = service
        Task.detached { await service.shutdown() }
    }

    /// Rate limits count in fixed windows aligned to multiples of their length since 1970, by the
    /// database's clock when shared. The tests' limits use a window of about a day whose length is
    /// picked when first used so that it began at least a quarter of it ago and has at least a
    /// quarter left: a test's few requests never straddle its edge on however loaded a machine, so
    /// no test waits for one, and the end a refusal names (Retry-After) is known.
    static let rateLimitWindow = Duration.seconds(windowAwayFromItsEdges(now: Int(Date().timeIntervalSince1970)))

    /// A window length of at most a day with `now` in the middle half of its window. One second
    /// shorter moves `now` about 20,000 s further into its window (a second per window since
    /// 1970), so a few steps down from a day find one.
    static func windowAwayFromItsEdges(now: Int) -> Int {
        var window = 86_400
        while !(window / 4...window - window / 4).contains(now % window) { window -= 1 }
        return window
    }

    static func secondsLeftInTheRateLimitWindow() -> Int {
        let window = Int(rateLimitWindow.components.seconds)
        return window - Int(Date().timeIntervalSince1970) % window
    }

    /// A refusal's Retry-After names the end of the current window: no earlier than what is left
    /// of it now, and no more than two minutes later (the answer was written a little before).
    static func isTheWindowsEnd(_ retryAfter: Int?) -> Bool {
        guard let retryAfter else { return false }
        let left = secondsLeftInTheRateLimitWindow()
        return retryAfter >= left && retryAfter <= left + 120
    }

    /// Of a row of `outbox`: sent and answered. A handed message (a new purchase's webhook) is
    /// written delivered before it is sent, and is in flight until its sender settles it.
    static let sentCondition = "(status = 'delivered' AND NOT \(OutboxRepository.inFlight))"

    /// Outbox pacing for tests: polls and retries in tens of milliseconds.
    static func fastOutbox(giveUpAfter: Duration = .seconds(3600)) -> OutboxWorker.Configuration {
        var configuration = OutboxWorker.Configuration()
        configuration.pollInterval = .milliseconds(50)
        configuration.baseDelay = .milliseconds(50)
        configuration.maxDelay = .milliseconds(200)
        configuration.probeInterval = .milliseconds(100)
        configuration.giveUpAfter = giveUpAfter
        return fewSenders(configuration)
    }

    /// A handful of sends under way: each is a transfer thread, and the suite runs many services at once.
    static func fewSenders(_ configuration: OutboxWorker.Configuration) -> OutboxWorker.Configuration {
        var configuration = configuration
        configuration.maxInFlight = 6
        configuration.perClient = 4
        return configuration
    }

    static func settings(name: String = "Game", environments: [StoreEnvironment], gameID: Int64?) -> ClientSettings {
        var settings = ClientSettings()
        settings.name = name
        settings.gameID = gameID
        settings.appIdentifiers[AppStoreProvider.bundleIDKind.name] = ["com.example.game"]
        settings.environments = environments
        settings.settings[Client.allowInsecureURLSetting] = ["on"]  // the tests' receivers speak plain http
        return settings
    }

    func count(_ table: String) async throws -> Int {
        try await pool.query("SELECT count(*) AS n FROM \(unescaped: table)")[0].decode("n", as: Int.self)
    }

    /// Verifies, as the game's client, a new App Store purchase for each id (its own original
    /// transaction); the answers' statuses, in order.
    func verifyPurchases(_ transactionIDs: [String]) async throws -> [Int] {
        var statuses: [Int] = []
        for id in transactionIDs {
            let receipt = try pki.sign(AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id]))
            statuses.append(
                try await client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status)
        }
        return statuses
    }
}
