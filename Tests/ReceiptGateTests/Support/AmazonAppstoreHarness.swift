import AlogameGateway
import AmazonAppstore
import AmazonAppstoreTestSupport
import Foundation
import HiveAxyl
import Postgres
import ReceiptCore
import ReceiptGate
import TestSupport

/// A running service with the Amazon Appstore provider (pointed at a fake RVS and a fake SNS
/// topic), Hive Axyl and the Alogame gateway, and one client made the way an operator makes it:
/// `receiptgate client create` with the Amazon flags, through the built binary, on the same
/// database and master key. Everything the service logs is kept for the secret checks.
struct AmazonAppstoreHarness {
    static let package = "com.example.game.amazon"
    static let hiveAppID = "com.example.game.hive"
    static let adminToken = String(repeating: "z", count: 40)

    let service: Service
    let pool: PostgresPool
    let rvs: FakeRVS
    let sns: FakeSNS
    let receiver: GooglePlayHarness.Receiver
    let client: SignedClient
    /// The CLI's environment: the same database and master key as the service.
    let cli: [String: String]
    /// What `client create` printed, secret included (shown once, as to an operator).
    let created: [String: Any]
    let log: ServerLogCapture

    static func start(
        environments: String = "production,sandbox", requestTimeoutSeconds: Int = 30,
        quiet: QuietSubscriptionSettings? = nil,
        certificateTimeout: Duration? = nil
    ) async throws -> AmazonAppstoreHarness {
        let (rvs, sns, receiver) = (try FakeRVS(), try FakeSNS(), try GooglePlayHarness.Receiver())
        let cli = try await Binary.databaseEnvironment()
        let created = try await createClient(
            cli, environments: environments, hooks: "http://127.0.0.1:\(receiver.server.port)")
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = cli["DATABASE_URL"]
        configuration.masterKey = Data(base64Encoded: cli["RECEIPTGATE_MASTER_KEY"] ?? "")
        configuration.dataDirectory = TestDatabase.temporaryDirectory("amazon")
        configuration.adminToken = adminToken
        configuration.outboundAllowPrivate = true  // the receiver listens on loopback
        configuration.requestTimeoutSeconds = requestTimeoutSeconds
        if let quiet { configuration.quietSubscriptions = quiet }
        let log = ServerLogCapture()
        let database = try Database.open(configuration, logger: log.logger)
        let providerConfiguration = rvs.configuration(certURLPattern: sns.certificateURLPattern)
        let certificateHTTP = certificateTimeout.map {
            AmazonAppstoreProvider.certificateClient(threads: providerConfiguration.maxCertificateFetches, timeout: $0)
        }
        let provider = try AmazonAppstoreProvider(
            configuration: providerConfiguration, http: FakeRVS.http(),
            certificateHTTP: certificateHTTP, logger: log.logger)
        let service = try Service(
            configuration: configuration, logger: log.logger, database: database, stores: [provider.registration],
            dialects: [AlogameGateway(), HiveAxyl()])
        service.outboxConfiguration = VerifyHarness.fastOutbox()
        try await service.start()
        let client = SignedClient(
            port: service.port, clientID: created["client_id"] as? String ?? "",
            secret: created["client_secret"] as? String ?? "")
        return AmazonAppstoreHarness(
            service: service, pool: database.pool, rvs: rvs, sns: sns, receiver: receiver, client: client, cli: cli,
            created: created, log: log)
    }

    /// `receiptgate client create` with the Amazon flags, as an operator types it; what it printed.
    static func createClient(
        _ cli: [String: String], environments: String = "production,sandbox",
        hooks: String = "http://127.0.0.1:9"
    ) async throws -> [String: Any] {
        let made = try await Binary.run(
            [
                "client", "create", "--name", "Amazon game", "--game-id", "42", "--environments", environments,
                "--amazon-package-name", package, "--amazon-shared-secret", FakeRVS.sharedSecret,
                "--app-id", hiveAppID, "--webhook-url", "\(hooks)/hooks", "--refund-callback-url", "\(hooks)/refunds",
                "--allow-insecure-url",
            ], cli)
        guard made.status == 0 else { throw RawHTTP.Failure(description: "client create failed: \(made.stderr)") }
        return try Binary.json(made.stdout)
    }

    /// Scans the log for secrets (a find fails the test), then stops everything.
    func stop() {
        log.scan()
        let (service, rvs, sns, receiver) = (service, rvs, sns, receiver)
        Task.detached {
            await service.shutdown()
            await rvs.shutdown()
            await sns.shutdown()
            await receiver.server.shutdown()
        }
    }

    func verify(
        _ receipt: String, user: String? = "amzn1.account.user-1", product: String = "gems100"
    ) async throws -> RawHTTP.Response {
        var body: [String: Any] = ["store": "amazon_appstore", "receipt": receipt, "product_id": product]
        body["amazon_user_id"] = user
        return try await client.post("/v1/verify", json: body)
    }

    /// An SNS delivery as Amazon sends it: JSON in a text/plain body.
    func deliver(_ body: Data) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: service.port, method: "POST", path: "/v1/notifications/amazon-appstore",
            headers: ["Content-Type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification"], body: body
        )
    }

    /// Amazon's Real-Time Notification for a receipt, as the SNS `Message`.
    static func news(_ type: String, receipt: String, user: String = "amzn1.account.user-1") -> [String: Any] {
        [
            "appPackageName": package, "notificationType": type, "appUserId": user, "receiptId": receipt,
            "relatedReceipts": [String: String](),
            "timestamp": 1_764_632_402_000, "betaProductTransaction": false,
        ]
    }

    func admin(_ path: String) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: service.port, path: path, headers: ["Authorization": "Bearer \(Self.adminToken)"])
    }

    func state(_ transactionID: String) async throws -> String? {
        try await pool.query("SELECT state FROM transactions WHERE transaction_id = \(transactionID)").first?.decode(
            "state", as: String.self)
    }

    func count(_ sql: PostgresQuery) async throws -> Int {
        try await pool.query(sql)[0].decode("n", as: Int.self)
    }
}
