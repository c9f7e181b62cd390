public import Foundation
import HTTPServer
import OpenSSLCrypto
public import ReceiptCore
import Synchronization

/// The running service: database, migrations, HTTP server and its routes, outbox worker and
/// upkeep. `start()` then `shutdown()`; nothing important lives only in this process's memory.
public final class Service: Sendable {
    public let configuration: ServiceConfiguration
    public let logger: Logger
    public let database: Database
    public let repositories: Repositories
    public let metrics: Metrics
    /// The one clock the service's logic reads (deadlines, give-ups, sweeps, signatures); tests
    /// move it. Wall-clock timeouts of infrastructure (sockets, the pool) keep real time.
    public let now: @Sendable () -> Date
    /// Verifications by store and outcome, for `/metrics` and the console.
    public let verifications: VerificationTally
    public let stores: [StoreRegistration]
    public let dialects: [any DialectProvider]
    /// What `start()` set going and `shutdown()` stops, and the settings read at `start()`; all
    /// under one lock, so a shutdown racing a start or another shutdown stops each part once.
    private struct Lifecycle {
        var server: HTTPServer?
        var adminServer: HTTPServer?
        /// Started in this order; stopped in reverse.
        var background: [any BackgroundPart] = []
        var clientCache: ClientCache?
        var routeTable: [(method: String, pattern: String)] = []
        var shutDown = false
        var outboxConfiguration = OutboxWorker.Configuration()
        var wrapClientDirectory: (@Sendable (any ClientDirectory) -> any ClientDirectory)?
    }

    private let lifecycle = Mutex(Lifecycle())

    var clientCache: ClientCache? { lifecycle.withLock { $0.clientCache } }
    /// Lets a test wrap the client directory the service picked (to count lookups), before `start()`.
    var wrapClientDirectory: (@Sendable (any ClientDirectory) -> any ClientDirectory)? {
        get { lifecycle.withLock { $0.wrapClientDirectory } }
        set { lifecycle.withLock { $0.wrapClientDirectory = newValue } }
    }
    /// How the outbox worker paces deliveries (tests shorten the delays), before `start()`.
    public var outboxConfiguration: OutboxWorker.Configuration {
        get { lifecycle.withLock { $0.outboxConfiguration } }
        set { lifecycle.withLock { $0.outboxConfiguration = newValue } }
    }
    /// Every (method, pattern) served, once started.
    public var routeTable: [(method: String, pattern: String)] { lifecycle.withLock { $0.routeTable } }

    /// The dialects' client settings under their display names (the stores' come with their declarations).
    let dialectSettings: [(plugin: String, settings: [ClientSettingDeclaration])]

    public init(
        configuration: ServiceConfiguration, logger: Logger, database: Database,
        stores: [StoreRegistration] = [], dialects: [any DialectProvider] = [],
        dialectSettings: [(plugin: String, settings: [ClientSettingDeclaration])] = [], creatingMasterKey: Bool = true,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.now = now
        metrics = Metrics(now: now)
        self.configuration = configuration
        self.stores = stores
        self.dialects = dialects
        self.dialectSettings = dialectSettings
        self.logger = logger
        self.database = database
        verifications = VerificationTally(stores: stores.map(\.store.rawValue), now: now)
        let master = try SecretBox.loadMasterKey(
            configured: configuration.masterKey, dataDirectory: configuration.dataDirectory,
            creating: creatingMasterKey)
        if let generatedAt = master.generatedAt {
            logger.warning(
                "generated a new master key; back it up, and give every process sharing this database the same key",
                ["path": generatedAt])
        }
        repositories = Repositories(
            pool: database.pool, secrets: SecretBox(masterKey: master.key),
            refundCallbacks: try Self.refundCallbackFormats(dialects),
            refundAnswerDelay: Double(configuration.refundReviewDelaySeconds), readStandby: database.readPool,
            now: now)
    }

    public var clients: ClientRepository { repositories.clients }

    /// How an operator's client settings are read and checked, for every plugin served.
    public var clientSettingsInput: ClientSettingsInput {
        ClientSettingsInput(
            identifierKinds: stores.map(\.declaration.identifiers),
            pluginSettings: stores.map { ($0.declaration.displayName, $0.declaration.settings) } + dialectSettings,
            refundCallbackFormats: dialects.compactMap(\.refundCallbacks?.format).sorted())
    }

    /// The core's part of the OpenAPI document with each served plugin's part in place; throws
    /// `OpenAPIDocument.Unplaced` (start-up stops) when a plugin's part has no place in it.
    func openAPIDocument() throws -> Data? {
        try OpenAPIDocument.served(
            configuredPath: configuration.openAPIPath, stores: stores.map(\.declaration),
            dialects: dialects
        ).map { Data($0.utf8) }
    }

    /// Refund-callback renderers by the format name clients choose; two dialects may not claim one
    /// name. A client that chose none (an empty format) gets the first dialect's that has one.
    static func refundCallbackFormats(_ dialects: [any DialectProvider]) throws -> [String: any RefundCallbackRenderer]
    {
        var formats: [String: any RefundCallbackRenderer] = [:]
        for renderer in dialects.compactMap(\.refundCallbacks) {
            guard formats[renderer.format] == nil else {
                throw ClientStoreError.invalid("two dialects render refund callbacks as \(renderer.format)")
            }
            formats[renderer.format] = renderer
        }
        formats[""] = dialects.lazy.compactMap(\.refundCallbacks).first
        return formats
    }

    /// The port actually listened on (after `start`).
    public var port: Int { lifecycle.withLock { $0.server }?.port ?? 0 }
    /// The admin listener's port, when `RECEIPTGATE_ADMIN_ADDR` is set.
    public var adminPort: Int? { lifecycle.withLock { $0.adminServer }?.port }

    public func start() async throws {
        let applied = try await database.migrate()
        if !applied.isEmpty {
            logger.info("applied migrations", ["versions": applied.map(String.init).joined(separator: ",")])
        }
        _ = try await repositories.signingKeys.current()  // the token signing key exists from the first start on

        let rateLimiter = RateLimiter(
            shared: repositories.rateLimits, overrides: configuration.rateLimits, logger: logger, now: now)
        let directory = startClientDirectory()
        var pipeline = VerifyPipeline(
            stores: stores, transactions: repositories.transactions, clients: repositories.clients,
            directory: directory, logger: logger)
        // Verifications without effects share commits; the messages they owe go straight to this
        // process's outbox worker, written handed (delivered, in flight until it settles them).
        let outboxLease = outboxConfiguration.lease.components.seconds
        // Which game servers' receivers are held open: one answer for the worker and for the
        // writers that hand it messages.
        let circuits = ReceiverCircuits(outboxConfiguration, now: now)
        // Room for a burst: what does not fit is written for the placer and a claim, which cost
        // Postgres about as much again as the message itself.
        let handoff = OutboxHandoff(
            capacity: 8 * outboxConfiguration.maxInFlight, leaseSeconds: max(1, Int(outboxLease)), circuits: circuits)
        pipeline.batcher = RecordBatcher(pool: database.pool, handoff: handoff, now: now)
        pipeline.tally = verifications
        pipeline.orders = OrderRepository(pool: database.pool)
        pipeline.timeLeftForRecording = VerifyPipeline.timeLeftForRecording(
            requestTimeout: .seconds(configuration.requestTimeoutSeconds))
        let core = ServiceDialectCore(
            pipeline: pipeline, clients: repositories.clients, directory: directory,
            transactions: repositories.transactions,
            rateLimiter: rateLimiter, tokens: repositories.tokens, accounts: repositories.accounts,
            replayGuard: repositories.replay,
            signer: ServiceTokenSigner(
                keys: repositories.signingKeys,
                issuer: { [weak self, configuration] in configuration.issuer(port: self?.port ?? 0) },
                accessTokenLifetime: .seconds(configuration.accessTokenLifetimeSeconds)),
            now: now)
        let mounter = RouteMounter(
            directory: directory, authentication: ClientAuthentication(directory: directory, now: now),
            tokens: repositories.tokens, replayGuard: repositories.replay, rateLimiter: rateLimiter,
            adminGate: try configuration.adminToken.map {
                try AdminTokenGate(token: $0, throttle: AdminTokenThrottle(now: now))
            },
            trustedProxies: configuration.trustedProxies, logger: logger)
        let serverBox = ServerBox()
        let ledgerReads = LedgerReads(
            primary: database.pool, standby: database.readPool,
            maxLagSeconds: Double(configuration.readMaxLagMilliseconds) / 1000)
        if let positions = ledgerReads.positions {
            positions.start()
            lifecycle.withLock { $0.background.append(positions) }
        }
        let operational = OperationalRoutes(
            database: database, metrics: metrics,
            openAPIDocument: try openAPIDocument(),
            inFlight: { serverBox.server?.inFlightRequests ?? 0 }, groupCommit: pipeline.batcher,
            clientCache: { [weak self] in self?.clientCache?.status }, verifications: verifications,
            ledgerReads: ledgerReads)
        // What stores tell, pushed or polled, taken one way: a buyer's signed purchase claimed through the pipeline.
        let intake = StoreNewsIntake(
            notifications: repositories.notifications,
            claims: StoreClaims(pipeline: pipeline, directory: directory, logger: logger))
        let (router, adminRouter) = try routers(
            core: core, mounter: mounter, operational: operational, ledgerReads: ledgerReads, intake: intake)
        let responder = router.build(handlerTimeout: .seconds(configuration.requestTimeoutSeconds))
        lifecycle.withLock { $0.routeTable = responder.routeTable }
        var serverConfiguration = HTTPServer.Configuration(host: configuration.host, port: configuration.port)
        serverConfiguration.threadCount = configuration.httpThreads
        serverConfiguration.maxBodyBytes = configuration.maxBodyBytes
        serverConfiguration.connectionLimitPerIP = configuration.maxConnectionsPerIP
        serverConfiguration.connectionLimit = configuration.maxConnections
        serverConfiguration.requestReceiveTimeoutSeconds = configuration.requestReceiveTimeoutSeconds
        let server = HTTPServer(configuration: serverConfiguration, responder: responder)
        try server.start()
        serverBox.server = server
        lifecycle.withLock { $0.server = server }
        if let adminRouter { try startAdminListener(adminRouter) }
        startBackgroundWork(directory: directory, handoff: handoff, intake: intake)
        let shownHost = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        logger.info(
            "listening",
            [
                "url": "http://\(shownHost):\(server.port)", "database": database.description,
                "version": ReceiptGateVersion.current,
            ])
    }

    /// `/metrics` and `/admin` on their own listener (an internal interface), nowhere else.
    private func startAdminListener(_ adminRouter: Router) throws {
        guard let address = configuration.adminAddress else { return }
        var adminConfiguration = HTTPServer.Configuration(host: address.host, port: address.port)
        adminConfiguration.threadCount = 1
        adminConfiguration.maxBodyBytes = 64 << 10
        let admin = HTTPServer(
            configuration: adminConfiguration,
            responder: adminRouter.build(handlerTimeout: .seconds(configuration.requestTimeoutSeconds)))
        try admin.start()
        lifecycle.withLock { $0.adminServer = admin }
        logger.info("admin listening", ["url": "http://\(address.shown):\(admin.port)"])
    }

    /// The outbox worker, the stores' pollers and the upkeep loop.
    private func startBackgroundWork(directory: any ClientDirectory, handoff: OutboxHandoff, intake: StoreNewsIntake) {
        let acknowledgers = Dictionary(
            stores.compactMap { registration in registration.acknowledgement.map { (registration.store, $0) } },
            uniquingKeysWith: { first, _ in first })
        var outboxConfiguration = self.outboxConfiguration
        outboxConfiguration.allowPrivateDestinations =
            outboxConfiguration.allowPrivateDestinations || configuration.outboundAllowPrivate
        let answerers = Dictionary(
            stores.compactMap { registration in registration.refundAnswering.map { (registration.store, $0) } },
            uniquingKeysWith: { first, _ in first })
        let refundRequests = RefundRequestRepository(pool: database.pool)
        let refundAnswers =
            answerers.isEmpty
            ? nil
            : RefundAnswers(
                answerers: answerers, requests: refundRequests, clients: repositories.clients,
                metrics: metrics, logger: logger, now: now)
        let accountTokenSetters = Dictionary(
            stores.compactMap { registration in registration.accountTokenSetting.map { (registration.store, $0) } },
            uniquingKeysWith: { first, _ in first })
        let externalPurchaseReports = self.externalPurchaseReports
        // The worker's database work goes through connections of its own, and it reads a client's
        // secret through the client directory (cached, invalidated on change) as requests do.
        let secrets = repositories.outbox.secrets
        let worker = OutboxWorker(
            outbox: OutboxRepository(pool: database.outboxPool, secrets: secrets),
            clients: ClientRepository(pool: database.outboxPool, secrets: secrets), acknowledgers: acknowledgers,
            configuration: outboxConfiguration, logger: logger,
            mailer: configuration.smtp.map { Mailer(settings: $0, now: now) },
            refundAnswers: refundAnswers, accountTokenSetters: accountTokenSetters,
            externalPurchaseReports: externalPurchaseReports.reporters.isEmpty ? nil : externalPurchaseReports,
            signingSecret: { [directory] clientID in
                try await directory.entry(for: clientID).map { ($0.client, $0.secret) }
            }, handoff: handoff, now: now)
        worker.start()
        let polls = StorePollRunner(
            polls: PollRepository(pool: database.pool), clients: repositories.clients, intake: intake, logger: logger,
            metrics: metrics, now: now)
        polls.start(
            StorePollRunner.polls(
                for: stores, quiet: configuration.quietSubscriptions,
                queries: QuietSubscriptionQueries(pool: database.pool)))
        let retention = Retention(
            pool: database.pool,
            settings: Retention.Settings(
                attemptsDays: configuration.retainAttemptsDays, outboxDays: configuration.retainOutboxDays,
                notificationsDays: configuration.retainNotificationsDays))
        // Where the healing of heads stands: a page of pending messages a minute, however long the backlog.
        let healed = Mutex<OutboxHeads.Position?>(nil)
        let upkeep = BackgroundLoop("upkeep", every: .seconds(60), logger: logger) {
            [repositories, logger, metrics, now] in
            try await repositories.removeExpired()
            // Messages a process of the version before wrote or moved, left without a head.
            let next = try await repositories.outbox.healHeads(after: healed.withLock { $0 }).next
            healed.withLock { $0 = next }
            let removed = try await retention.sweep(now: now())
            if removed != Retention.Removed() {
                logger.info(
                    "removed what is kept only for a while",
                    [
                        "attempts": String(removed.attempts),
                        "outbox": String(removed.outboxMessages),
                        "notification_bodies": String(removed.notificationBodies),
                        "body_pieces": String(removed.bodyPieces),
                    ])
            }
            // A refund request whose deadline passed unanswered (every process down, the store refusing) is missed.
            try await refundRequests.closeUndecided()
            for store in try await refundRequests.closeMissed(now: now()) {
                metrics.recordRefundDeadlineMissed(store: store)
                logger.warning("refund request deadline missed", ["store": store])
            }
            return .pause
        }
        let entitlements = EntitlementRepository(pool: database.pool)
        // Catalogs and no index (a ledger from before it): built once, telling nothing. Then whole
        // batches of expired grants back to back while any are due, then a pause.
        let buildIndex: @Sendable () async -> Void = { [logger] in
            do {
                if try await entitlements.needsBuilding() {
                    logger.info("building the entitlement index from the catalogs")
                    let players = try await entitlements.refreshCatalogs(announce: false)
                    logger.info("built the entitlement index", ["players": String(players)])
                }
            } catch { logger.warning("building the entitlement index failed", ["error": "\(error)"]) }
        }
        let sweep = BackgroundLoop(
            "entitlement expiry sweep", every: .seconds(configuration.entitlementSweepSeconds), logger: logger,
            first: buildIndex
        ) {
            try await entitlements.sweepExpired() > 0 ? .again : .pause
        }
        // Catalog changes whose refresh nobody finished (a request's deadline, an interrupted
        // command, a process gone): any process takes each over once its lease passed.
        let refresher = CatalogRefresher(pool: database.pool)
        let catalogRefresh = BackgroundLoop(
            "catalog refresh", every: .seconds(configuration.catalogRefreshSeconds), logger: logger
        ) { [logger] in
            let refreshed = try await refresher.drainDue()
            if refreshed > 0 { logger.info("finished catalog refreshes left owed", ["products": String(refreshed)]) }
            return .pause
        }
        // Reports owed to stores for purchases made outside their billing: a sale arrived, a
        // deadline passed, a refund. Idle where no store takes them.
        let externalPurchases = BackgroundLoop(
            "external purchase reports", every: configuration.externalPurchaseSweepInterval, logger: logger
        ) {
            guard !externalPurchaseReports.reporters.isEmpty else { return .pause }
            return try await externalPurchaseReports.sweep() > 0 ? .again : .pause
        }
        for loop in [upkeep, sweep, catalogRefresh, externalPurchases] { loop.start() }
        lifecycle.withLock { $0.background += [worker, polls, upkeep, sweep, catalogRefresh, externalPurchases] }
    }

    /// Clients authenticated from memory, invalidated by LISTEN/NOTIFY; or, with the cache switched
    /// off, read from the database every time.
    private func startClientDirectory() -> any ClientDirectory {
        let directory: any ClientDirectory
        if configuration.clientCacheSeconds > 0 {
            let cache = ClientCache(
                repository: repositories.clients, lifetime: .seconds(configuration.clientCacheSeconds), logger: logger)
            cache.start(connectionString: database.pool.connectionString)
            lifecycle.withLock { $0.clientCache = cache }
            directory = cache
        } else {
            directory = DatabaseClientDirectory(repository: repositories.clients)
        }
        return wrapClientDirectory?(directory) ?? directory
    }

    /// Stops accepting requests, finishes those in flight, then closes the database. Only the
    /// first call does anything.
    public func shutdown() async {
        let parts = lifecycle.withLock { lifecycle -> Lifecycle? in
            guard !lifecycle.shutDown else { return nil }
            defer { lifecycle.shutDown = true }
            return lifecycle
        }
        guard let parts else { return }
        logger.info("shutting down; finishing in-flight requests")
        await parts.server?.shutdown(gracePeriod: .seconds(configuration.shutdownGraceSeconds))
        await parts.adminServer?.shutdown(gracePeriod: .seconds(1))
        // Every part asked at once (none starts new work while another finishes), then each
        // waited for, in the reverse of the order they started.
        for part in parts.background.reversed() { part.cancel() }
        for part in parts.background.reversed() { await part.stop() }
        parts.clientCache?.stop()
        await database.closed(logger: logger)
        logger.info("stopped")
    }
}

/// Lets routes built before the server exists read from it once it does.
private final class ServerBox: Sendable {
    private let stored = Mutex<HTTPServer?>(nil)
    var server: HTTPServer? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}
