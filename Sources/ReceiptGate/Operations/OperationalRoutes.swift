package import Foundation
package import HTTPServer

/// /healthz, /readyz, /metrics and /openapi.yaml.
package struct OperationalRoutes: Sendable {
    let database: Database
    let metrics: Metrics
    let openAPIDocument: Data?
    let inFlight: @Sendable () -> Int
    let groupCommit: RecordBatcher?
    let clientCache: @Sendable () -> ClientCache.Status?
    let verifications: VerificationTally?
    let ledgerReads: LedgerReads?

    init(
        database: Database, metrics: Metrics, openAPIDocument: Data?, inFlight: @escaping @Sendable () -> Int,
        groupCommit: RecordBatcher? = nil,
        clientCache: @escaping @Sendable () -> ClientCache.Status? = { nil }, verifications: VerificationTally? = nil,
        ledgerReads: LedgerReads? = nil
    ) {
        self.ledgerReads = ledgerReads
        self.database = database
        self.metrics = metrics
        self.openAPIDocument = openAPIDocument
        self.inFlight = inFlight
        self.groupCommit = groupCommit
        self.clientCache = clientCache
        self.verifications = verifications
    }

    /// `/healthz`, `/readyz`, `/openapi.yaml`, and `/metrics` unless it is served on the admin listener.
    package func register(on router: inout Router, includeMetrics: Bool = true) {
        if includeMetrics { registerMetrics(on: &router) }
        router.get("/healthz") { _ in .json(["status": "ok"]) }
        router.get("/readyz") { [database] _ in
            await Self.isReady(database)
                ? .json(["status": "ready", "database": "reachable"])
                : .json(["status": "not_ready", "database": "unreachable"], status: 503)
        }
        router.get("/openapi.yaml") { [openAPIDocument] _ in
            guard let openAPIDocument else {
                throw HTTPError(
                    status: 404, code: "NOT_FOUND", message: "openapi.yaml was not found; set RECEIPTGATE_OPENAPI_PATH")
            }
            return HTTPResponse(status: 200, headers: ["Content-Type": "application/yaml"], body: openAPIDocument)
        }
    }

    /// Whether the database answers, within 3 s: a wedged database must not hang a probe or a page.
    static func isReady(_ database: Database) async -> Bool {
        (try? await withDeadline(.seconds(3)) { try await database.ping() }) != nil
    }

    package func registerMetrics(on router: inout Router) {
        router.get("/metrics") {
            [metrics, database, inFlight, groupCommit, clientCache, verifications, ledgerReads] _ in
            var text = metrics.render(
                pool: database.poolStatistics, inFlight: inFlight(), groupCommit: groupCommit?.served,
                clientCache: clientCache(), verifications: verifications)
            if database.readPool != nil {
                text += await Self.readStandbyMetrics(database) + (ledgerReads?.renderMetrics() ?? "")
            }
            text += metrics.renderRefunds() + (await Self.refundRequestMetrics(database))
            text +=
                metrics.renderExternalPurchaseReports()
                + (await Self.externalPurchaseTokenMetrics(database, now: metrics.now))
            return .text(text, contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
    }

    /// Refund requests in the ledger by store, status and the store's outcome: the cluster's, read
    /// at each scrape (bounded; left out if the database does not answer in time).
    static func refundRequestMetrics(_ database: Database) async -> String {
        let rows = try? await withDeadline(.seconds(2)) {
            try await RefundRequestRepository(pool: database.pool).counts()
        }
        guard let rows else { return "" }
        var text =
            "# HELP receiptgate_refund_requests Refund requests stores asked (every process), by status (pending, answered, missed) "
            + "and the store's outcome (refunded, declined, none yet).\n# TYPE receiptgate_refund_requests gauge\n"
        for (store, status, outcome, count) in rows {
            text +=
                "receiptgate_refund_requests{store=\(Metrics.quote(store)),status=\(Metrics.quote(status)),outcome=\(Metrics.quote(outcome))} \(count)\n"
        }
        return text
    }

    /// External purchase tokens by store and state, and those waiting with their deadline within a
    /// day (the cluster's, read at each scrape; left out if the database does not answer in time).
    static func externalPurchaseTokenMetrics(_ database: Database, now: @escaping @Sendable () -> Date) async -> String
    {
        let counts = try? await withDeadline(.seconds(2)) {
            try await ExternalPurchaseTokenRepository(pool: database.pool).counts(now: now())
        }
        guard let counts else { return "" }
        var text =
            "# HELP receiptgate_external_purchase_tokens External purchase tokens (every process) by store and state.\n"
            + "# TYPE receiptgate_external_purchase_tokens gauge\n"
        for (store, state, count) in counts.states {
            text +=
                "receiptgate_external_purchase_tokens{store=\(Metrics.quote(store)),state=\(Metrics.quote(state))} \(count)\n"
        }
        text +=
            "# HELP receiptgate_external_purchase_tokens_near_deadline Tokens with no report owed yet whose deadline is within a day.\n"
            + "# TYPE receiptgate_external_purchase_tokens_near_deadline gauge\n"
        for (store, count) in counts.nearDeadline {
            text += "receiptgate_external_purchase_tokens_near_deadline{store=\(Metrics.quote(store))} \(count)\n"
        }
        text +=
            "# HELP receiptgate_external_purchase_unreported_notices_total Notices from a store that a token's report was late.\n"
            + "# TYPE receiptgate_external_purchase_unreported_notices_total counter\n"
        for (store, count) in counts.unreportedNotices {
            text += "receiptgate_external_purchase_unreported_notices_total{store=\(Metrics.quote(store))} \(count)\n"
        }
        return text
    }

    /// The read standby's replication lag, and whether it answered (bounded: a scrape must not hang
    /// on a standby that stopped answering).
    static func readStandbyMetrics(_ database: Database) async -> String {
        let lag = try? await withDeadline(.seconds(2)) { try await database.readStandbyLagSeconds() }
        var text =
            "# HELP receiptgate_db_read_standby_up 1 if the DATABASE_READ_URL standby answered this scrape.\n"
            + "# TYPE receiptgate_db_read_standby_up gauge\nreceiptgate_db_read_standby_up \(lag == nil ? 0 : 1)\n"
        if let lag = lag ?? nil {
            text +=
                "# HELP receiptgate_db_read_standby_lag_seconds How far the read standby's replay is behind its primary.\n"
                + "# TYPE receiptgate_db_read_standby_lag_seconds gauge\nreceiptgate_db_read_standby_lag_seconds \(lag.isFinite ? String(lag) : "+Inf")\n"
        }
        return text
    }

    /// Deploy/openapi.yaml: from RECEIPTGATE_OPENAPI_PATH, else found beside the executable
    /// (a checkout's .build/…/receiptgate), the working directory, or /usr/share/receiptgate.
    package static func loadOpenAPIDocument(configuredPath: String?) -> Data? {
        if let configuredPath { return FileManager.default.contents(atPath: configuredPath) }
        var candidates = [
            URL(fileURLWithPath: "Deploy/openapi.yaml"), URL(fileURLWithPath: "/usr/share/receiptgate/openapi.yaml"),
        ]
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.insert(directory.appendingPathComponent("Deploy/openapi.yaml"), at: candidates.count - 1)
            directory.deleteLastPathComponent()
        }
        return candidates.lazy.compactMap { FileManager.default.contents(atPath: $0.path) }.first
    }
}
