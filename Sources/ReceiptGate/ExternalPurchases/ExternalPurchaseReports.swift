import Foundation
import Postgres
import ReceiptCore

/// Reports of purchases made outside the stores' billing, following from the ledger: a sweep
/// registers the tokens web sales carry and moves every token whose report is owed (its sale
/// arrived, its deadline passed, more of it was refunded), queueing the report in the outbox; the
/// outbox worker sends each through its store's provider and records the store's answer.
struct ExternalPurchaseReports: Sendable {
    /// The stores that take reports, in the registry's order (a carried token is offered to each in turn).
    let reporters: [(registration: StoreRegistration, reporter: any ExternalPurchaseReporting)]
    let tokens: ExternalPurchaseTokenRepository
    let clients: ClientRepository
    let metrics: Metrics?
    let logger: Logger
    /// The service's clock: when a token's deadline has passed.
    let now: @Sendable () -> Date

    init(
        stores: [StoreRegistration], tokens: ExternalPurchaseTokenRepository, clients: ClientRepository,
        metrics: Metrics?, logger: Logger, now: @escaping @Sendable () -> Date
    ) {
        reporters = stores.compactMap { registration in
            registration.externalPurchaseReporting.map { (registration, $0) }
        }
        self.tokens = tokens
        self.clients = clients
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    var noSaleStores: Set<StoreID> {
        Set(reporters.filter { $0.reporter.reportsTokensWithoutSale }.map(\.registration.store))
    }

    func reporter(for store: StoreID) -> (registration: StoreRegistration, reporter: any ExternalPurchaseReporting)? {
        reporters.first { $0.registration.store == store }
    }

    /// One pass: carried tokens registered, then every token with a report owed moved. Returns
    /// how many reports were queued.
    @discardableResult
    func sweep() async throws -> Int {
        for carried in try await tokens.unregisteredCarriedTokens() {
            try await registerCarried(carried)
        }
        let now = now(), noSale = noSaleStores
        var queued = 0
        for id in try await tokens.due(now: now, noSaleStores: noSale) {
            queued += try await tokens.pool.withTransaction { connection in
                try ExternalPurchaseLedger.advance(id, now: now, noSaleStores: noSale, on: connection).count
            }
        }
        return queued
    }

    /// A token a web sale carried: taken by the first store (in the registry's order) that reads it
    /// as its own, if the app it names is the client's; refused (kept, never reported) otherwise.
    func registerCarried(_ carried: ExternalPurchaseTokenRepository.CarriedToken) async throws {
        guard let client = try await clients.find(carried.clientID)?.info else { return }
        var problems: [String] = []
        for (registration, reporter) in reporters {
            let apps = client.appIdentifiers(registration.declaration.identifiers)
            do {
                let token = try reporter.parseToken(
                    carried.token, packageName: apps.count == 1 ? apps[0] : nil, now: now())
                if let problem = Self.problem(token, client: client, registration: registration) {
                    // The token is this store's (it read it), for another app: no other store takes it.
                    problems.append(problem)
                    break
                }
                let registered = try await tokens.register(
                    .init(
                        token: token, raw: carried.token, clientID: client.clientID, playerID: carried.playerID,
                        webStore: carried.store, orderID: carried.orderID,
                        reportBy: reporter.reportBy(token, client: client, registeredAt: now())))
                if registered != nil { return }
                problems.append("\(registration.store): another client registered this token")
            } catch let refused as ExternalPurchaseTokenRefused {
                problems.append("\(registration.store): \(refused.reason)")
            }
        }
        let why = problems.isEmpty ? "no store takes external purchase reports" : problems.joined(separator: "; ")
        try await tokens.refuseCarried(carried, why: why)
        logger.warning(
            "a web sale carries an external purchase token no store takes; it is not reported",
            ["client.id": carried.clientID, "store": carried.store, "problem": String(why.prefix(300))])
    }

    /// The one check a token passes before it is accepted, from the API or a web sale: its app is
    /// one of the client's for the token's store, in an environment the client accepts.
    static func problem(_ token: ExternalPurchaseToken, client: ClientInfo, registration: StoreRegistration) -> String?
    {
        guard client.appIdentifiers(registration.declaration.identifiers).contains(token.appIdentifier) else {
            return
                "the token is for \(registration.declaration.identifiers.name) \(token.appIdentifier), not one of this client's apps"
        }
        guard client.environments.contains(token.environment) else {
            return
                "the token is a \(token.environment.rawValue) token and this client does not accept \(token.environment.rawValue)"
        }
        return nil
    }

    /// Sends a queued report. Nil on success; a store's final refusal is kept and not tried again.
    func send(_ payload: String) async -> (failure: String?, final: Bool) {
        guard let report = try? JSONDecoder().decode(ExternalPurchaseReport.self, from: Data(payload.utf8)),
            let reporter = reporter(for: report.store)?.reporter
        else {
            return ("no store provider takes this external purchase report", false)
        }
        let labels = (store: report.store.rawValue, kind: report.kind.rawValue)
        if report.lines.contains(where: { $0.taxCountry == nil }) {
            // The web store did not say where the buyer is taxed: the store's rule for a line
            // without a country applies (one store takes it, another refuses it, and the refusal shows).
            logger.warning(
                "an external purchase report has a line without the buyer's tax country; it is sent without one",
                [
                    "store": labels.store, "client.id": report.clientID, "kind": labels.kind,
                    "token.row": String(report.tokenRowID),
                ])
        }
        do {
            let credentials = try await clients.sealedSettings(
                of: report.clientID, prefix: "\(report.store.rawValue).")
            let answer = try await reporter.send(report, credentials: credentials)
            try await tokens.settle(report, answer: answer.answer)
            metrics?.recordExternalPurchaseReport(store: labels.store, kind: labels.kind, outcome: "accepted")
            logger.info(
                "external purchase report taken by the store",
                [
                    "store": labels.store, "client.id": report.clientID, "kind": labels.kind,
                    "token.row": String(report.tokenRowID),
                ])
            return (nil, false)
        } catch let refused as StoreVerificationError where !refused.isRetryable {
            try? await tokens.refuse(report, why: refused.description)
            metrics?.recordExternalPurchaseReport(store: labels.store, kind: labels.kind, outcome: "refused")
            logger.warning(
                "external purchase report refused by the store; it is not sent again",
                [
                    "store": labels.store, "client.id": report.clientID, "kind": labels.kind,
                    "token.row": String(report.tokenRowID), "error": String(refused.description.prefix(300)),
                ])
            return ("refused by the store: \(refused.description)", true)
        } catch {
            try? await tokens.noteFailure(report, why: "\(error)")
            metrics?.recordExternalPurchaseReport(store: labels.store, kind: labels.kind, outcome: "failed")
            return ("\(error)", false)
        }
    }

    /// A store says a token is still unreported: its report is owed now, in the notification's
    /// transaction. A waiting token is reported at once (its sale, else as having none); a token
    /// nobody registered is recorded for the client holding its app and reported as unrecognized.
    /// Returns what was done, for the log.
    static func raise(
        _ token: ExternalPurchaseToken, kind: AppIdentifierKind?, now: Date, on connection: PostgresConnection
    ) throws -> String {
        if let row = try ExternalPurchaseTokenRepository.find(
            store: token.store, environment: token.environment, reportID: token.reportID, on: connection)
        {
            try connection.execute(
                "UPDATE external_purchase_tokens SET unreported_notices = unreported_notices + 1 WHERE id = \(row.id)")
            guard row.state == "waiting" else { return "already \(row.state)" }
            try connection.execute(
                "UPDATE external_purchase_tokens SET report_by = LEAST(report_by, \(now)) WHERE id = \(row.id)")
            let queued = try ExternalPurchaseLedger.advance(
                row.id, now: now, noSaleStores: [token.store], on: connection)
            return queued.map(\.rawValue).joined(separator: ",")
        }
        guard let kind,
            let owner = try connection.query(
                """
                SELECT id FROM clients WHERE disabled_at IS NULL AND app_identifiers -> \(kind.name) ? \(token.appIdentifier)
                ORDER BY created_at, id LIMIT 1
                """
            ).first?.decode("id", as: String.self),
            let id = try ExternalPurchaseTokenRepository.registerUnrecognized(token, clientID: owner, on: connection)
        else { return "no client holds the app" }
        try connection.execute(
            "UPDATE external_purchase_tokens SET unreported_notices = unreported_notices + 1 WHERE id = \(id)")
        try ExternalPurchaseLedger.queue(
            .init(
                id: id, clientID: owner, store: token.store, environment: token.environment,
                appIdentifier: token.appIdentifier, reportID: token.reportID, token: token.reportID),
            .unrecognized, lines: [], on: connection)
        return ExternalPurchaseReport.Kind.unrecognized.rawValue
    }
}
