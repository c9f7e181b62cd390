import HTTPServer
import ReceiptCore

extension Service {
    /// Every route, mounted through the core: the public router, and the admin router when
    /// `RECEIPTGATE_ADMIN_ADDR` puts `/metrics` and `/admin` on a listener of their own.
    func routers(
        core: ServiceDialectCore, mounter: RouteMounter, operational: OperationalRoutes, ledgerReads: LedgerReads,
        intake: StoreNewsIntake
    ) throws -> (main: Router, admin: Router?) {
        var router = Router()
        router.use(ObservabilityMiddleware(logger: logger, metrics: metrics))
        let separateAdmin = configuration.adminAddress != nil
        operational.register(on: &router, includeMetrics: !separateAdmin)
        // The ledger reads go to the read standby while it is fresh enough; verification always writes to the primary.
        let native = NativeAPI(
            core: core, transactions: repositories.transactions.reading(via: ledgerReads),
            entitlements: EntitlementRepository(pool: database.pool, reads: ledgerReads))
        mounter.mount(native.routes, render: NativeAPI.render, on: &router)
        mounter.mount(
            ExternalPurchaseTokenRoutes(reports: externalPurchaseReports, stores: stores).routes,
            render: NativeAPI.render, on: &router)
        mounter.mount(
            NotificationRoutes(stores: stores, clients: repositories.clients, intake: intake).routes,
            render: NativeAPI.render, on: &router)
        for dialect in dialects {
            mounter.mount(dialect.routes(core: core), render: { dialect.render($0) }, on: &router)
        }
        let adminRoutes =
            WebhookAdmin(outbox: repositories.outbox).routes
            + NotificationAdmin(notifications: repositories.notifications).routes
            + RefundAdmin(
                requests: RefundRequestRepository(pool: database.pool), clients: repositories.clients,
                input: clientSettingsInput
            ).routes
            + CatalogAdmin(catalog: repositories.catalog, clients: repositories.clients, stores: stores.map(\.store))
            .routes + orderRefunds.routes + subscriptionChanges.routes
        guard separateAdmin else {
            mounter.mount(adminRoutes, render: NativeAPI.render, on: &router)
            try console(adminGate: mounter.adminGate)?.register(on: &router)
            return (router, nil)
        }
        var admin = Router()
        admin.use(ObservabilityMiddleware(logger: logger, metrics: metrics))
        operational.registerMetrics(on: &admin)
        admin.get("/healthz") { _ in .json(["status": "ok"]) }
        mounter.mount(adminRoutes, render: NativeAPI.render, on: &admin)
        try console(adminGate: mounter.adminGate)?.register(on: &admin)
        return (router, admin)
    }

    /// The operator console, where the admin API is, when there is an admin token to sign in with;
    /// it checks the token with the admin API's gate, so guesses at either count together.
    private func console(adminGate: AdminTokenGate?) throws -> Console? {
        guard let adminToken = configuration.adminToken, let adminGate else { return nil }
        let host = configuration.adminAddress?.host ?? configuration.host
        let sessions = try ConsoleSessions(
            repository: ConsoleRepository(pool: database.pool), adminToken: adminToken,
            secureCookies: !Self.isLoopback(host), trustedProxies: configuration.trustedProxies)
        var console = Console(
            sessions: sessions, adminGate: adminGate, audit: ConsoleRepository(pool: database.pool),
            queries: OperatorQueries(pool: database.pool), clients: repositories.clients, outbox: repositories.outbox,
            database: database, stores: stores, input: clientSettingsInput,
            logger: logger,
            now: now)
        console.orderRefunds = orderRefunds
        console.subscriptionChanges = subscriptionChanges
        return console
    }

    /// The operator asking stores to refund orders (admin API and console).
    var orderRefunds: OrderRefunds {
        OrderRefunds(
            stores: stores, clients: repositories.clients, queries: OperatorQueries(pool: database.pool),
            audit: ConsoleRepository(pool: database.pool), logger: logger)
    }

    /// The operator revoking, canceling or deferring subscriptions (admin API and console).
    var subscriptionChanges: SubscriptionChanges {
        SubscriptionChanges(
            stores: stores, clients: repositories.clients, queries: OperatorQueries(pool: database.pool),
            audit: ConsoleRepository(pool: database.pool), logger: logger)
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
