import Foundation
import ReceiptCore

/// `POST /v1/external-purchase-tokens`: the game registers a store's token of a purchase made
/// outside its billing (the app got it from the store's SDK), optionally with the web store's
/// order it paid for. The token is parsed
/// and checked against the client's apps and environments before anything is kept; a sale already
/// in the ledger is tied and its report queued at once.
struct ExternalPurchaseTokenRoutes: Sendable {
    let reports: ExternalPurchaseReports
    let stores: [StoreRegistration]

    var routes: [Route] {
        [
            Route(
                "POST", "/v1/external-purchase-tokens", authentication: .signedClient(.allow),
                rateLimits: [NativeAPI.perClient]
            ) { request, context in
                await register(request.body, context: context)
            }
        ]
    }

    /// Store tokens are short (a few hundred bytes).
    static let maxTokenBytes = 4096

    struct Body: Decodable {
        let store: String
        let token: String
        let playerID: String?
        let packageName: String?
        let webStore: String?
        let orderID: String?

        enum CodingKeys: String, CodingKey {
            case store, token, playerID = "player_id", packageName = "package_name", webStore = "web_store"
            case orderID = "order_id"
        }
    }

    func register(_ data: Data, context: RouteContext) async -> RouteResponse {
        guard let client = context.client else {
            return NativeAPI.error(.unauthorized, "client authentication required")
        }
        let body: Body
        switch JSONBody.decode(Body.self, from: data) {
        case .success(let parsed): body = parsed
        case .failure(let problem): return NativeAPI.error(problem.code, problem.message)
        }
        if let refusal = Self.fieldProblem(body) { return NativeAPI.error(.invalidField, refusal) }
        guard let (registration, reporter) = reports.reporter(for: StoreID(rawValue: body.store)) else {
            let names = reports.reporters.map { "'\($0.registration.store.rawValue)'" }.joined(separator: ", ")
            return NativeAPI.error(
                .invalidField, "store must be a store that takes external purchase reports: \(names)")
        }
        if let webStore = body.webStore, !stores.contains(where: { $0.store.rawValue == webStore }) {
            return NativeAPI.error(.invalidField, "web_store must be a registered store id")
        }
        let token: ExternalPurchaseToken
        do {
            token = try reporter.parseToken(body.token, packageName: body.packageName, now: reports.now())
        } catch let refused as ExternalPurchaseTokenRefused {
            return NativeAPI.error(.invalidField, "token: \(refused.reason)")
        } catch {
            return NativeAPI.error(.invalidField, "token could not be read")
        }
        if let problem = ExternalPurchaseReports.problem(token, client: client, registration: registration) {
            let code: ErrorCode =
                client.appIdentifiers(registration.declaration.identifiers).contains(token.appIdentifier)
                ? .environmentMismatch : .bundleMismatch
            return NativeAPI.error(code, problem)
        }
        let now = reports.now()
        do {
            guard
                let row = try await reports.tokens.register(
                    .init(
                        token: token, raw: body.token, clientID: client.clientID, playerID: body.playerID,
                        webStore: body.webStore, orderID: body.orderID,
                        reportBy: reporter.reportBy(token, client: client, registeredAt: now)))
            else { return NativeAPI.error(.duplicateTransaction, "another client registered this token") }
            // A sale already in the ledger is reported now, not at the next sweep.
            let noSale = reports.noSaleStores
            _ = try await reports.tokens.pool.withTransaction { connection in
                try ExternalPurchaseLedger.advance(row.id, now: now, noSaleStores: noSale, on: connection)
            }
            let current = try await reports.tokens.list(clientID: client.clientID, id: row.id).first ?? row
            return .json(["external_purchase_token": NativeExternalPurchaseToken(current, now: now)])
        } catch {
            context.logger.error("external purchase token not recorded", ["error": "\(error)"])
            return NativeAPI.error(.verifierError, "the token could not be recorded; safe to retry")
        }
    }

    /// Sizes and characters, before anything is parsed.
    static func fieldProblem(_ body: Body) -> String? {
        if body.token.isEmpty || body.token.utf8.count > maxTokenBytes
            || !body.token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f })
        {
            return "token must be 1 to \(maxTokenBytes) bytes of printable ASCII"
        }
        for (name, value) in [
            ("store", body.store), ("player_id", body.playerID), ("package_name", body.packageName),
            ("web_store", body.webStore), ("order_id", body.orderID),
        ] {
            if let value, let problem = Identifier.problem(value) ?? (value.isEmpty ? "is empty" : nil) {
                return "\(name) \(problem)"
            }
        }
        if (body.webStore == nil) != (body.orderID == nil) {
            return "web_store and order_id go together"
        }
        return nil
    }
}

/// A token as the API shows it.
struct NativeExternalPurchaseToken: Encodable {
    let id: Int64
    let store: String
    let environment: String
    let appIdentifier: String
    let reportID: String
    let state: String
    let webStore: String?
    let orderID: String?
    let reportByMs: Int64
    let storeDeadlineMs: Int64
    let secondsLeft: Int64

    init(_ row: ExternalPurchaseTokenRepository.Row, now: Date) {
        id = row.id
        store = row.store
        environment = row.environment
        appIdentifier = row.appIdentifier
        reportID = row.reportID
        state = row.state
        webStore = row.webStore
        orderID = row.orderID
        reportByMs = row.reportBy.epochMilliseconds
        storeDeadlineMs = row.storeDeadline.epochMilliseconds
        secondsLeft = max(0, Int64(row.reportBy.timeIntervalSince(now)))
    }

    enum CodingKeys: String, CodingKey {
        case id, store, environment, appIdentifier = "app_identifier", reportID = "report_id", state
        case webStore = "web_store", orderID = "order_id", reportByMs = "report_by_ms"
        case storeDeadlineMs = "store_deadline_ms", secondsLeft = "seconds_left"
    }
}
