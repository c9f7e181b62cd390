import Foundation
import Plugins
import ReceiptCore
import ReceiptGate

/// `receiptgate client ...`: administration of API clients, printing JSON on stdout.
enum ClientCommand {
    static let coreOptions = Dictionary(
        uniqueKeysWithValues: ClientSettingsInput.coreOptions.map { ($0, Arguments.Kind.single) })

    /// The core's options and every plugin's, as the registry declares them.
    static let settingOptions: [String: Arguments.Kind] = coreOptions.merging(pluginOptions) { core, _ in core }

    static func run(_ arguments: [String], context: LazyContext) async throws {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { throw HelpRequested(text: HelpText.client) }
            throw UsageError("missing action: create, list, show, update, rotate-secret or disable (see --help)")
        }
        // `--allow-insecure-url`, `--consumption-consent` and `--sample-content` alone mean on.
        let rest = arguments.dropFirst().map {
            ["--allow-insecure-url", "--consumption-consent", "--sample-content"].contains($0) ? "\($0)=on" : $0
        }
        switch action {
        case "create":
            let parsed = try Arguments(rest, options: settingOptions, help: HelpText.clientCreate)
            _ = try parsed.expectPositionals([])
            var settings = try settings(from: parsed)
            guard settings.name != nil else { throw UsageError("--name is required") }
            if settings.environments == nil, let implied = try input.impliedEnvironments(settings) {
                settings.environments = implied
            }
            try checkSchemes(settings, alreadyAllowsInsecure: false)
            try await context.withClients { store in
                let created = try await store.create(settings)
                try context.printJSON(
                    ClientWithSecret(
                        client: created.client, secret: created.secret,
                        notificationRoutes: notificationRoutes(of: created.client)))
            }
        case "list":
            let parsed = try Arguments(rest, options: [:], help: HelpText.clientList)
            _ = try parsed.expectPositionals([])
            try await context.withClients { store in try context.printJSON(["clients": try await store.list()]) }
        case "show":
            let id = try Arguments(rest, options: [:], help: HelpText.clientShow).expectPositionals(["client_id"])[0]
            try await context.withClients { store in
                guard let client = try await store.find(id) else { throw ClientStoreError.notFound(id) }
                try context.printJSON(client)
            }
        case "update":
            let parsed = try Arguments(rest, options: settingOptions, help: HelpText.clientUpdate)
            let id = try parsed.expectPositionals(["client_id"])[0]
            let settings = try settings(from: parsed)
            try await context.withClients { store in
                guard let current = try await store.find(id) else { throw ClientStoreError.notFound(id) }
                try checkSchemes(settings, alreadyAllowsInsecure: current.allowsInsecureURLs)
                try context.printJSON(try await store.update(id, settings))
            }
        case "rotate-secret":
            let id = try Arguments(rest, options: [:], help: HelpText.clientRotate).expectPositionals(["client_id"])[0]
            try await context.withClients { store in
                let secret = try await store.rotateSecret(id)
                guard let client = try await store.find(id) else { throw ClientStoreError.notFound(id) }
                try context.printJSON(ClientWithSecret(client: client, secret: secret))
            }
        case "disable":
            let id = try Arguments(rest, options: [:], help: HelpText.clientDisable).expectPositionals(["client_id"])[0]
            try await context.withClients { store in try context.printJSON(try await store.disable(id)) }
        case "--help", "-h", "help":
            throw HelpRequested(text: HelpText.client)
        default:
            throw UsageError(
                "unknown client action \"\(action)\" (expected create, list, show, update, rotate-secret or disable)")
        }
    }
}

extension ClientCommand {
    /// The notification routes that belong to this client alone (a store whose signing secret is
    /// one endpoint's), by store id, for the client's apps: what to give the store as its endpoint.
    static func notificationRoutes(of client: Client) -> [String: String] {
        // A store whose settings do not start here has no route to print; creating the client goes on.
        let stores = (try? StartedPlugins.stores()) ?? []
        var routes: [String: String] = [:]
        for registration in stores {
            guard let path = registration.notifications?.notificationPath, path.hasSuffix("/{client_id}"),
                !client.info.appIdentifiers(registration.declaration.identifiers).isEmpty
            else { continue }
            routes[registration.store.rawValue] = path.replacingOccurrences(of: "{client_id}", with: client.clientID)
        }
        return routes
    }
}

/// What `create` and `rotate-secret` print: the client plus its secret, this once, and on
/// create the notification routes that are the client's own.
struct ClientWithSecret: Encodable {
    let client: Client
    let secret: String
    var notificationRoutes: [String: String] = [:]

    enum CodingKeys: String, CodingKey {
        case secret = "client_secret", warning, notificationRoutes = "notification_routes"
    }

    func encode(to encoder: any Encoder) throws {
        try client.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        if !notificationRoutes.isEmpty { try container.encode(notificationRoutes, forKey: .notificationRoutes) }
        try container.encode(secret, forKey: .secret)
        try container.encode(
            "client_secret is shown only now; store it securely, it cannot be retrieved again", forKey: .warning)
    }
}
