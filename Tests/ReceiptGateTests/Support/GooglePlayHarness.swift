import AlogameGateway
import AppStore
import Foundation
import GooglePlay
import GooglePlayTestSupport
import HTTPServer
import OpenSSLCrypto
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport

/// A running service with the Google Play provider (pointed at a fake Google) and the Alogame
/// dialect, one client for com.example.game whose own service-account key is stored sealed (the
/// service has none), and a receiver for its webhooks and refund callbacks.
struct GooglePlayHarness {
    let service: Service
    let pool: PostgresPool
    let google: FakeGooglePlay
    let client: SignedClient
    let receiver: Receiver

    /// Records every POST it gets, by path.
    final class Receiver: Sendable {
        let server: HTTPServer
        let received = LockedBox<[(path: String, body: [String: Any])]>([])

        init() throws {
            let received = received
            var router = Router()
            for path in ["/hooks", "/refunds"] {
                router.post(path) { request in
                    let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
                    received.update { $0.append((path, body)) }
                    return .json(["ok": true])
                }
            }
            server = HTTPServer(
                configuration: .init(host: "127.0.0.1", port: 0),
                responder: router.build(handlerExecutor: FakeServing.executor))
            try server.start()
        }

        func bodies(_ path: String) -> [[String: Any]] { received.get().filter { $0.path == path }.map(\.body) }
    }

    static func start(
        pollEvery interval: Duration? = nil, settings: [String: [String]?] = [:],
        dialects: [any DialectProvider] = [AlogameGateway()], quiet: QuietSubscriptionSettings? = nil,
        adminToken: String? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> GooglePlayHarness {
        let google = try FakeGooglePlay()
        let receiver = try Receiver()
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = try await TestDatabase.makeDatabase(prefix: "google")
        configuration.masterKey = Data(repeating: 7, count: 32)
        configuration.dataDirectory = TestDatabase.temporaryDirectory("google")
        configuration.outboundAllowPrivate = true
        if let quiet { configuration.quietSubscriptions = quiet }
        configuration.adminToken = adminToken
        let logger = Logger(minimumLevel: .error)
        let database = try Database.open(configuration, logger: logger)
        var settings_ = try google.configuration()
        settings_.serviceAccountKey = nil  // only the client's own key works
        settings_.voidedPurchasesInterval = interval
        let provider = GooglePlayProvider(
            configuration: settings_, http: FakeGooglePlay.http(), logger: logger, now: now)
        let service = try Service(
            configuration: configuration, logger: logger, database: database, stores: [provider.registration],
            dialects: dialects, now: now)
        service.outboxConfiguration = VerifyHarness.fastOutbox()
        try await service.start()
        var client = ClientSettings()
        client.name = "Android game"
        client.gameID = 42
        client.appIdentifiers[GooglePlayProvider.packageNameKind.name] = ["com.example.game"]
        client.environments = [.production, .sandbox]
        client.webhookURL = "http://127.0.0.1:\(receiver.server.port)/hooks"
        client.refundCallbackURL = "http://127.0.0.1:\(receiver.server.port)/refunds"
        client.settings = settings
        client.settings[Client.allowInsecureURLSetting] = ["on"]  // the receiver speaks plain http on loopback
        client.sealedSettings = [GooglePlayProvider.Setting.serviceAccountKey: try google.serviceAccountJSON()]
        let created = try await service.clients.create(client)
        return GooglePlayHarness(
            service: service, pool: database.pool, google: google,
            client: SignedClient(port: service.port, clientID: created.client.clientID, secret: created.secret),
            receiver: receiver)
    }

    func stop() {
        let service = service, google = google, receiver = receiver
        Task.detached {
            await service.shutdown()
            await google.shutdown()
            await receiver.server.shutdown()
        }
    }

    func push(_ notification: [String: Any], messageID: String) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: service.port, method: "POST", path: "/v1/notifications/google-play",
            headers: ["Content-Type": "application/json", "Authorization": "Bearer \(try google.oidcToken())"],
            body: try FakeGooglePlay.pushBody(notification, messageID: messageID))
    }

    func transaction(_ id: String) async throws -> PostgresRow? {
        try await pool.query(
            "SELECT state, product_id, original_transaction_id, environment FROM transactions WHERE transaction_id = \(id)"
        ).first
    }
}
