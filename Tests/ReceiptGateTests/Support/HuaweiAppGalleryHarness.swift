import AccountLink
import AlogameGateway
import Foundation
import HiveAxyl
import HuaweiAppGallery
import HuaweiAppGalleryTestSupport
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport

/// A running service with the Huawei AppGallery provider (pointed at a fake Huawei), every
/// dialect, and one client made the way an operator makes it: `receiptgate client create` with
/// the Huawei flags, through the built binary, on the same database and master key. Everything
/// the service logs is kept for the secret checks.
struct HuaweiAppGalleryHarness {
    static let hiveAppID = "com.example.game.hive"
    static let adminToken = String(repeating: "h", count: 40)

    let service: Service
    let pool: PostgresPool
    let huawei: FakeHuawei
    let receiver: GooglePlayHarness.Receiver
    let client: SignedClient
    let cli: [String: String]
    /// What `client create` printed, secret included.
    let created: [String: Any]
    let log: ServerLogCapture

    /// `extraFlags`: more of `client create`'s flags (another store's apps); `configure` changes the
    /// provider's configuration (pointed at the fake) before it is made; `clock`, when given, is
    /// the provider's time.
    static func start(
        extraFlags: [String] = [], stores more: [StoreRegistration] = [], clock: LockedBox<Date>? = nil,
        configure: (inout HuaweiAppGalleryConfiguration) -> Void = { _ in }
    ) async throws -> HuaweiAppGalleryHarness {
        let (huawei, receiver) = (try FakeHuawei(), try GooglePlayHarness.Receiver())
        let cli = try await Binary.databaseEnvironment()
        let hooks = "http://127.0.0.1:\(receiver.server.port)"
        let made = try await Binary.run(
            [
                "client", "create", "--name", "Huawei game", "--game-id", "42", "--environments", "production,sandbox",
                "--huawei-package-name", FakeHuawei.package, "--huawei-app-id", FakeHuawei.appID,
                "--huawei-app-secret", FakeHuawei.appSecret, "--huawei-iap-public-key", try huawei.publicKeyBase64,
                "--app-id", hiveAppID, "--webhook-url", "\(hooks)/hooks", "--allow-insecure-url",
            ] + extraFlags, cli)
        guard made.status == 0 else { throw RawHTTP.Failure(description: "client create failed: \(made.stderr)") }
        let created = try Binary.json(made.stdout)
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = cli["DATABASE_URL"]
        configuration.masterKey = Data(base64Encoded: cli["RECEIPTGATE_MASTER_KEY"] ?? "")
        configuration.dataDirectory = TestDatabase.temporaryDirectory("huawei")
        configuration.adminToken = adminToken
        configuration.outboundAllowPrivate = true  // the receiver listens on loopback
        let log = ServerLogCapture()
        let database = try Database.open(configuration, logger: log.logger)
        var huaweiConfiguration = huawei.configuration()
        configure(&huaweiConfiguration)
        let provider = HuaweiAppGalleryProvider(
            configuration: huaweiConfiguration, http: FakeHuawei.http(), logger: log.logger,
            now: { clock?.get() ?? Date() })
        let service = try Service(
            configuration: configuration, logger: log.logger, database: database,
            stores: [provider.registration] + more,
            dialects: [AlogameGateway(), HiveAxyl(), AccountLink()])
        service.outboxConfiguration = VerifyHarness.fastOutbox()
        try await service.start()
        let client = SignedClient(
            port: service.port, clientID: created["client_id"] as? String ?? "",
            secret: created["client_secret"] as? String ?? "")
        return HuaweiAppGalleryHarness(
            service: service, pool: database.pool, huawei: huawei, receiver: receiver, client: client, cli: cli,
            created: created, log: log)
    }

    /// Scans the log for secrets (a find fails the test), then stops everything.
    func stop() {
        log.scan()
        let (service, huawei, receiver) = (service, huawei, receiver)
        Task.detached {
            await service.shutdown()
            await huawei.shutdown()
            await receiver.server.shutdown()
        }
    }

    /// Another tenant: a client of its own game made with `client create`, with its own Huawei app
    /// (which the fake then accepts) and package, its purchases signed with the fake's key.
    func addTenant(
        name: String, gameID: Int, appID: String, secret: String, package: String
    ) async throws -> SignedClient {
        huawei.addApp(id: appID, secret: secret)
        let made = try await Binary.run(
            [
                "client", "create", "--name", name, "--game-id", String(gameID), "--environments", "production,sandbox",
                "--huawei-package-name", package, "--huawei-app-id", appID, "--huawei-app-secret", secret,
                "--huawei-iap-public-key", try huawei.publicKeyBase64,
            ], cli)
        guard made.status == 0 else { throw RawHTTP.Failure(description: "client create failed: \(made.stderr)") }
        let created = try Binary.json(made.stdout)
        return SignedClient(
            port: service.port, clientID: created["client_id"] as? String ?? "",
            secret: created["client_secret"] as? String ?? "")
    }

    /// Posts a notification to the Huawei route, as Huawei (or anyone) does.
    func notify(_ body: Data) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: service.port, method: "POST", path: "/v1/notifications/huawei-appgallery",
            headers: ["Content-Type": "application/json"], body: body)
    }

    func verify(_ receipt: String, product: String? = "gems100") async throws -> RawHTTP.Response {
        var body: [String: Any] = ["store": "huawei_appgallery", "receipt": receipt]
        body["product_id"] = product
        return try await client.post("/v1/verify", json: body)
    }

    func hive() -> HiveAxylCaller {
        HiveAxylCaller(port: service.port, clientID: client.clientID, secret: client.secret)
    }

    func state(_ transactionID: String) async throws -> String? {
        try await pool.query("SELECT state FROM transactions WHERE transaction_id = \(transactionID)").first?.decode(
            "state", as: String.self)
    }

    func count(_ sql: PostgresQuery) async throws -> Int {
        try await pool.query(sql)[0].decode("n", as: Int.self)
    }
}
