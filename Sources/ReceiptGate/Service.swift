import Crypto
public import Foundation
public import HTTPServer
public import Postgres
public import ReceiptCore

/// The running service: database, migrations, HTTP server and its routes. `start()` then
/// `shutdown()`; nothing important lives only in this process's memory.
public final class Service: @unchecked Sendable {
    public let configuration: ServiceConfiguration
    public let logger: Logger
    public let database: Database
    public let clients: ClientStore
    public let metrics = Metrics()
    public let storeProviders: [any NotificationReceiving]
    public let dialects: [any DialectProvider]
    private var server: HTTPServer?
    private var outboxWorker: OutboxWorker?
    /// How the outbox worker paces deliveries (tests shorten the delays).
    public var outboxConfiguration = OutboxWorker.Configuration()
    /// Every (method, pattern) served, once started.
    public private(set) var routeTable: [(method: String, pattern: String)] = []

    public init(configuration: ServiceConfiguration, logger: Logger, database: Database,
                storeProviders: [any NotificationReceiving] = [], dialects: [any DialectProvider] = []) throws {
        self.configuration = configuration
        self.storeProviders = storeProviders
        self.dialects = dialects
        self.logger = logger
        self.database = database
        let master = try SecretBox.loadMasterKey(configured: configuration.masterKey, dataDirectory: configuration.dataDirectory)
        if let generatedAt = master.generatedAt {
            logger.warning("generated a new master key; back it up, and give every process sharing this database the same key",
                           ["path": generatedAt])
        }
        clients = ClientStore(pool: database.pool, secrets: SecretBox(masterKey: master.key))
    }

    /// The port actually listened on (after `start`).
    public var port: Int { server?.port ?? 0 }

    public func start() async throws {
        let applied = try await database.migrate()
        if !applied.isEmpty { logger.info("applied migrations", ["versions": applied.map(String.init).joined(separator: ",")]) }

        var router = Router()
        router.use(ObservabilityMiddleware(logger: logger, metrics: metrics))
        let serverBox = ServerBox()
        OperationalRoutes(pool: database.pool, metrics: metrics,
                          openAPIDocument: OperationalRoutes.loadOpenAPIDocument(configuredPath: configuration.openAPIPath),
                          inFlight: { serverBox.server?.inFlightRequests ?? 0 })
            .register(on: &router)
        NotificationRoutes(providers: storeProviders, pool: database.pool, logger: logger,
                           refundCallbacks: dialects.compactMap { $0 as? any RefundCallbackRendering }.first).register(on: &router)
        let pipeline = VerifyPipeline(providers: storeProviders.compactMap { $0 as? any StoreProvider }, ledger: Ledger(pool: database.pool))
        let authentication = ClientAuthentication(clients: clients)
        NativeAPIRoutes(pipeline: pipeline, authentication: authentication, logger: logger).register(on: &router)
        ReadAPIRoutes(pool: database.pool, authentication: authentication).register(on: &router)
        let core = CoreForDialects(authentication: authentication, clients: clients, pipeline: pipeline,
                                   orderLookup: storeProviders.compactMap { $0 as? any OrderLookingUp }.first)
        CoreForDialects.register(dialects, core: core, on: &router)
        if let token = configuration.adminToken { WebhookAdmin(pool: database.pool).register(on: &router, token: token) }

        let responder = router.build(handlerTimeout: .seconds(configuration.requestTimeoutSeconds))
        routeTable = responder.routeTable
        var serverConfiguration = HTTPServer.Configuration(host: configuration.host, port: configuration.port)
        serverConfiguration.threadCount = configuration.httpThreads
        serverConfiguration.maxBodyBytes = configuration.maxBodyBytes
        serverConfiguration.connectionLimitPerIP = configuration.maxConnectionsPerIP
        serverConfiguration.connectionLimit = configuration.maxConnections
        serverConfiguration.requestReceiveTimeoutSeconds = configuration.requestReceiveTimeoutSeconds
        let server = HTTPServer(configuration: serverConfiguration, responder: responder)
        try server.start()
        serverBox.server = server
        self.server = server
        let worker = OutboxWorker(pool: database.pool, clients: clients, configuration: outboxConfiguration, logger: logger)
        worker.start()
        outboxWorker = worker
        let shownHost = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        logger.info("listening", ["url": "http://\(shownHost):\(server.port)", "database": database.description,
                                  "version": ReceiptGateVersion.current])
    }

    /// Stops accepting requests, finishes those in flight, then closes the database.
    public func shutdown() async {
        logger.info("shutting down; finishing in-flight requests")
        await server?.shutdown(gracePeriod: .seconds(configuration.shutdownGraceSeconds))
        await outboxWorker?.stop()
        database.close(logger: logger)
        logger.info("stopped")
    }
}

/// Lets routes built before the server exists read from it once it does.
private final class ServerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: HTTPServer?
    var server: HTTPServer? {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}
