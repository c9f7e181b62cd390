public import Foundation
public import HTTPServer
public import ReceiptCore

/// The core as dialect plugins see it, and the glue that mounts their routes on the router.
public struct CoreForDialects: DialectCore, OrderLookupCore {
    let authentication: ClientAuthentication
    let clients: ClientStore
    let pipeline: VerifyPipeline
    let orderLookup: (any OrderLookingUp)?

    public func lookUpOrder(_ orderID: String, client info: ClientInfo) async throws -> (order: StoreOrder, ledger: [String: LedgerPresence]) {
        guard let orderLookup else {
            throw StoreVerificationError(code: .verifierError, reason: "NO_ORDER_LOOKUP", message: "no store provider can look up orders")
        }
        guard let client = try await clients.find(info.clientID) else {
            throw StoreVerificationError(code: .unauthorized, reason: "CLIENT_UNKNOWN", message: "client is unknown")
        }
        let order = try await orderLookup.lookUpOrder(orderID, appIdentifiers: Set(client.bundleIDs))
        var ledger: [String: LedgerPresence] = [:]
        for id in order.entries.compactMap(\.transactionID) {
            let rows = try await clients.pool.query("""
                SELECT id, state, client_id, game_id FROM transactions
                WHERE store = \(StoreID.appStore.rawValue) AND transaction_id = \(id)
                ORDER BY environment = 'production' DESC LIMIT 1
                """)
            guard let row = rows.first else {
                ledger[id] = LedgerPresence(found: false, managementID: nil, state: nil, recordedForThisGame: false)
                continue
            }
            let owner: String = try row.decode("client_id")
            let gameID: Int64? = try row.decode("game_id")
            let mine = owner == client.clientID || (gameID != nil && gameID == client.gameID)
            // Another game's record is acknowledged, never shown.
            ledger[id] = LedgerPresence(found: true, managementID: mine ? try row.decode("id") : nil,
                                        state: mine ? try row.decode("state") : nil, recordedForThisGame: mine)
        }
        return (order, ledger)
    }

    public func authenticate(headers: [String: String], body: Data, rejectReplays: Bool) async throws(AuthenticationRefused) -> ClientInfo {
        do {
            let client = try await authentication.authenticate(header: { headers[$0.lowercased()] }, body: body, rejectReplays: rejectReplays)
            return ClientInfo(clientID: client.clientID, gameID: client.gameID)
        } catch let refused as AuthenticationRefused {
            throw refused
        } catch {
            throw AuthenticationRefused("authentication unavailable")
        }
    }

    public func verify(_ request: VerificationRequest, client info: ClientInfo) async throws -> (transaction: RecordedTransaction, duplicate: Bool) {
        guard let client = try await clients.find(info.clientID), !client.disabled else {
            throw StoreVerificationError(code: .unauthorized, reason: "CLIENT_DISABLED", message: "client is disabled")
        }
        let outcome = try await pipeline.verify(request, client: client)
        return (outcome.transaction.recorded, outcome.duplicate)
    }

    static func register(_ dialects: [any DialectProvider], core: CoreForDialects, on router: inout Router) {
        for dialect in dialects {
            for route in dialect.routes(core: core) {
                router.add(route.method, route.path) { request in
                    var headers: [String: String] = [:]
                    for field in request.headers { headers[field.name.lowercased()] = field.value }
                    let response = await route.handler(DialectRequest(method: request.method, path: request.path, headers: headers,
                                                                      body: request.body, requestID: request.requestID))
                    return HTTPResponse(status: response.status, headers: ["Content-Type": "application/json"], body: response.body)
                }
            }
        }
    }
}

extension LedgerTransaction {
    var recorded: RecordedTransaction {
        var recorded = RecordedTransaction(managementID: id, store: StoreID(rawValue: store),
                                           environment: StoreEnvironment(rawValue: environment) ?? .production,
                                           transactionID: transactionID, state: state, firstVerifiedAt: firstVerifiedAt)
        recorded.originalTransactionID = originalTransactionID
        recorded.productID = productID
        recorded.kind = type.flatMap(ProductKind.init(rawValue:))
        recorded.quantity = quantity
        recorded.priceMilliunits = priceMilliunits
        recorded.currency = currency
        recorded.storefront = storefront
        recorded.purchaseDate = purchaseDateMs.map { Date(timeIntervalSince1970: Double($0) / 1000) }
        recorded.ownership = ownership.flatMap(Ownership.init(rawValue:))
        return recorded
    }
}
