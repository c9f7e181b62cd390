import Foundation
import ReceiptCore

/// A client's product catalog through the admin API, behind `RECEIPTGATE_ADMIN_TOKEN`: the same
/// checks and audit as `receiptgate products`.
struct CatalogAdmin: Sendable {
    let catalog: ProductCatalogRepository
    let clients: ClientRepository
    let stores: [StoreID]

    var routes: [Route] {
        [
            Route("GET", "/admin/clients/{client_id}/products", authentication: .admin) { _, context in
                await withClient(context) { client in .json(["products": try await catalog.list(client: client)]) }
            },
            Route("PUT", "/admin/clients/{client_id}/products/{store}/{product_id}", authentication: .admin) {
                request, context in
                await withClient(context) { client in
                    struct Body: Decodable { let entitlements: [String] }
                    let body: Body
                    switch JSONBody.decode(Body.self, from: request.body) {
                    case .success(let parsed): body = parsed
                    case .failure(let problem): return NativeAPI.error(problem.code, problem.message)
                    }
                    let store = try knownStore(context)
                    return .json(
                        try await catalog.set(
                            client: client, store: store, product: context.pathParameters["product_id"] ?? "",
                            entitlements: body.entitlements, by: "admin-api",
                            refreshWithin: ProductCatalogRepository.interactiveRefreshBudget))
                }
            },
            Route("DELETE", "/admin/clients/{client_id}/products/{store}/{product_id}", authentication: .admin) {
                _, context in
                await withClient(context) { client in
                    let removed = try await catalog.remove(
                        client: client, store: try knownStore(context),
                        product: context.pathParameters["product_id"] ?? "",
                        entitlement: nil, by: "admin-api",
                        refreshWithin: ProductCatalogRepository.interactiveRefreshBudget)
                    return .json(["removed": removed])
                }
            },
        ]
    }

    private func knownStore(_ context: RouteContext) throws -> String {
        let store = context.pathParameters["store"] ?? ""
        guard stores.contains(StoreID(rawValue: store)) else {
            throw CatalogInputInvalid(
                option: "store",
                problem: "must be one of \(stores.map(\.rawValue).joined(separator: ", ")), got \"\(store)\"")
        }
        return store
    }

    private func withClient(
        _ context: RouteContext, _ body: (String) async throws -> RouteResponse
    ) async -> RouteResponse {
        for (name, value) in context.pathParameters.sorted(by: { $0.key < $1.key }) {
            if let problem = Identifier.problem(value) {
                return NativeAPI.error(.invalidField, "path parameter '\(name)' \(problem)")
            }
        }
        let id = context.pathParameters["client_id"] ?? ""
        do {
            guard try await clients.find(id) != nil else { return NativeAPI.error(.notFound, "no such client") }
            return try await body(id)
        } catch let invalid as CatalogInputInvalid {
            return NativeAPI.error(.invalidField, invalid.description)
        } catch {
            let answer = NativeAPI.error(.verifierError, "the catalog could not be read or changed; safe to retry")
            // A change that waited too long for the game's claims in flight, or a database away: 503, retry.
            return DatabaseOutage.answersRetry(error) ? DatabaseOutage.response(answer) : answer
        }
    }
}
