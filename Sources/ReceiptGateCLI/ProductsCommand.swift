import Foundation
import ReceiptCore
import ReceiptGate

/// `receiptgate products set|list|remove|price|prices`: a client's catalog of entitlements, and
/// its prices for the orders the service starts, audited.
enum ProductsCommand {
    static func run(_ arguments: [String]) async throws {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { throw HelpRequested(text: HelpText.products) }
            throw UsageError("missing action: set, list, remove, price or prices (see --help)")
        }
        let rest = Array(arguments.dropFirst())
        switch action {
        case "set":
            let parsed = try Arguments(
                rest, options: ["client": .single, "store": .single, "product-id": .single, "entitlement": .repeated],
                help: HelpText.products)
            _ = try parsed.expectPositionals([])
            let (client, store, product) = (
                try required(parsed, "client"), try knownStore(try required(parsed, "store")),
                try required(parsed, "product-id")
            )
            let entitlements = parsed.all("entitlement") ?? []
            guard !entitlements.isEmpty else {
                throw UsageError("--entitlement is required (repeat it to grant several)")
            }
            try await withCatalog(client: client) { catalog in
                try CommandContext.printJSON(
                    try await catalog.set(
                        client: client, store: store, product: product, entitlements: entitlements, by: "cli"))
            }
        case "list":
            let parsed = try Arguments(rest, options: ["client": .single], help: HelpText.products)
            _ = try parsed.expectPositionals([])
            let client = try required(parsed, "client")
            try await withCatalog(client: client) { catalog in
                try CommandContext.printJSON(["products": try await catalog.list(client: client)])
            }
        case "remove":
            let parsed = try Arguments(
                rest, options: ["client": .single, "store": .single, "product-id": .single, "entitlement": .single],
                help: HelpText.products)
            _ = try parsed.expectPositionals([])
            let (client, store, product) = (
                try required(parsed, "client"), try knownStore(try required(parsed, "store")),
                try required(parsed, "product-id")
            )
            try await withCatalog(client: client) { catalog in
                let removed = try await catalog.remove(
                    client: client, store: store, product: product, entitlement: parsed.single("entitlement"), by: "cli"
                )
                try CommandContext.printJSON(["removed": removed])
            }
        case "price":
            let parsed = try Arguments(
                rest,
                options: [
                    "client": .single, "store": .single, "product-id": .single, "currency": .single,
                    "price-milliunits": .single, "description": .single,
                ], help: HelpText.products)
            _ = try parsed.expectPositionals([])
            let (client, store, product) = (
                try required(parsed, "client"), try knownStore(try required(parsed, "store")),
                try required(parsed, "product-id")
            )
            guard let milliunits = Int64(try required(parsed, "price-milliunits")) else {
                throw UsageError("--price-milliunits must be a whole number of milliunits")
            }
            try await withCatalog(client: client) { catalog in
                try CommandContext.printJSON(
                    try await catalog.setPrice(
                        client: client, store: store, product: product, currency: try required(parsed, "currency"),
                        milliunits: milliunits, description: parsed.single("description"), by: "cli"))
            }
        case "prices":
            let parsed = try Arguments(rest, options: ["client": .single], help: HelpText.products)
            _ = try parsed.expectPositionals([])
            let client = try required(parsed, "client")
            try await withCatalog(client: client) { catalog in
                try CommandContext.printJSON(["prices": try await catalog.prices(client: client)])
            }
        case "help":
            throw HelpRequested(text: HelpText.products)
        default:
            throw UsageError("unknown products action \"\(action)\" (expected set, list, remove, price or prices)")
        }
    }

    static func required(_ parsed: Arguments, _ name: String) throws -> String {
        guard let value = parsed.single(name), !value.isEmpty else { throw UsageError("--\(name) is required") }
        return value
    }

    /// A store id the binary registers; anything else is refused before the database is touched.
    static func knownStore(_ store: String) throws -> String {
        let known = try StartedPlugins.stores().map(\.store.rawValue)
        guard known.contains(store) else {
            throw UsageError("unknown store \"\(store)\" (expected one of \(known.joined(separator: ", ")))")
        }
        return store
    }

    static func withCatalog(client: String, _ body: (ProductCatalogRepository) async throws -> Void) async throws {
        do {
            try await ReceiptGateCommand.makeContext().withRepositories { repositories in
                guard try await repositories.clients.find(client) != nil else {
                    throw ClientStoreError.notFound(client)
                }
                try await body(repositories.catalog)
            }
        } catch let invalid as CatalogInputInvalid {
            throw UsageError(invalid.description)
        }
    }
}
