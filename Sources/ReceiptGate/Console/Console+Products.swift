import Foundation
import HTTPServer
import ReceiptCore

/// A client's product catalog on its page: which entitlements each product grants, set and
/// removed with the command line's checks, every change in the audit log.
extension Console {
    var catalog: ProductCatalogRepository { ProductCatalogRepository(pool: queries.pool) }

    func registerProducts(on router: inout Router) {
        action(&router, "/console/clients/{client_id}/products") { request, form, session in
            try await setProduct(request.pathParameters["client_id"] ?? "", form, session)
        }
        action(&router, "/console/clients/{client_id}/products/remove") { request, form, session in
            try await removeProduct(request.pathParameters["client_id"] ?? "", form, session)
        }
    }

    func productsSection(_ client: Client, session: ConsoleSession) async throws -> HTML {
        let base = "/console/clients/\(HTML.component(client.clientID))/products"
        let rows = try await catalog.list(client: client.clientID).map { mapping -> HTML in
            let remove = ConsoleLayout.form(
                base + "/remove", session: session, button: "Remove",
                hidden: [("store", mapping.store), ("product_id", mapping.productID)])
            return
                "<tr><td class=\"store\">\(mapping.store)</td><td class=\"product\">\(mapping.productID)</td><td class=\"entitlements\">\(mapping.entitlements.joined(separator: ", "))</td><td>\(remove)</td></tr>"
        }
        let storeOptions = stores.map { store -> HTML in
            "<option value=\"\(store.store.rawValue)\">\(store.declaration.displayName)</option>"
        }
        return """
            \(ConsoleLayout.table(id: "products", caption: "What each product grants", headings: ["Store", "Product", "Entitlements", ""], rows: rows,
                                  empty: "No product is mapped to an entitlement yet."))
            \(ConsoleLayout.form(base, session: session, button: "Set product", buttonID: "set-product", style: "filters", """
                <div><label for="product-store">Store</label> <select id="product-store" name="store">\(storeOptions)</select></div>
                <div><label for="product-id">Product id</label> <input id="product-id" name="product_id" type="text" required></div>
                <div><label for="product-entitlements">Entitlements (comma-separated)</label> <input id="product-entitlements" name="entitlements" type="text" placeholder="vip, no_ads" required></div>
                """))
            """
    }

    private func setProduct(
        _ clientID: String, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        guard try await clients.find(clientID) != nil else { return notFound(session, "No client \(clientID).") }
        let store = form.text("store") ?? "", product = form.text("product_id") ?? ""
        let names = (form.text("entitlements") ?? "").split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        guard stores.contains(where: { $0.store.rawValue == store }) else {
            return try await clientPage(clientID, session, error: "Choose a store.", status: 422)
        }
        let mapping: ProductCatalogRepository.Mapping
        do {
            mapping = try await catalog.set(
                client: clientID, store: store, product: product, entitlements: names, by: session.label,
                refreshWithin: ProductCatalogRepository.interactiveRefreshBudget)
        } catch let invalid as CatalogInputInvalid {
            return try await clientPage(clientID, session, error: invalid.description, status: 422)
        }
        return try await clientPage(
            clientID, session, notice: "Product \(product) set." + (mapping.warning.map { " Note: \($0)." } ?? ""))
    }

    private func removeProduct(
        _ clientID: String, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        guard try await clients.find(clientID) != nil else { return notFound(session, "No client \(clientID).") }
        let store = form.text("store") ?? "", product = form.text("product_id") ?? ""
        do {
            let removed = try await catalog.remove(
                client: clientID, store: store, product: product, entitlement: nil, by: session.label,
                refreshWithin: ProductCatalogRepository.interactiveRefreshBudget)
            return try await clientPage(
                clientID, session, notice: removed ? "Product \(product) removed." : "Nothing to remove.")
        } catch let invalid as CatalogInputInvalid {
            return try await clientPage(clientID, session, error: invalid.description, status: 422)
        }
    }
}
