public import Foundation
public import HTTPServer
public import ReceiptCore

/// The core as dialect plugins see it, and the glue that mounts their routes on the router.
public struct CoreForDialects: DialectCore {
    let authentication: ClientAuthentication
    let clients: ClientStore
    let pipeline: VerifyPipeline

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

    public func verify(_ request: DialectVerifyRequest, client info: ClientInfo) async throws -> (transaction: RecordedTransaction, duplicate: Bool) {
        guard let client = try await clients.find(info.clientID), !client.disabled else {
            throw StoreVerificationError(code: .unauthorized, reason: "CLIENT_DISABLED", message: "client is disabled")
        }
        var verification = VerifyPipeline.Request(store: request.store.rawValue, evidence: request.evidence, requestID: request.requestID)
        verification.productID = request.productID
        verification.accountToken = request.accountToken
        verification.playerID = request.playerID
        verification.characterID = request.characterID
        verification.serverID = request.serverID
        let outcome = try await pipeline.verify(verification, client: client)
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
