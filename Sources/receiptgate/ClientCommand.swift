import Foundation
import Plugins
import ReceiptCore
import ReceiptGate

/// `receiptgate client ...`: administration of API clients, printing JSON on stdout.
enum ClientCommand {
    static let coreOptions: [String: Arguments.Kind] = [
        "name": .single, "game-id": .single, "environments": .single, "refund-callback-url": .single, "refund-callback-format": .single,
        "webhook-url": .single, "delivery-url": .single, "account-mismatch": .single, "allow-insecure-url": .single,
    ]

    /// The core's options and every plugin's, as the registry declares them.
    static let settingOptions: [String: Arguments.Kind] = coreOptions.merging(pluginOptions) { core, _ in core }

    static func run(_ arguments: [String], context: LazyContext) async throws {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { throw HelpRequested(text: HelpText.client) }
            throw UsageError("missing action: create, list, show, update, rotate-secret or disable (see --help)")
        }
        // `--allow-insecure-url` alone means on.
        let rest = arguments.dropFirst().map { $0 == "--allow-insecure-url" ? "--allow-insecure-url=on" : $0 }
        switch action {
        case "create":
            let parsed = try Arguments(rest, options: settingOptions, help: HelpText.clientCreate)
            _ = try parsed.expectPositionals([])
            var settings = try settings(from: parsed)
            guard settings.name != nil else { throw UsageError("--name is required") }
            if settings.environments == nil, let implied = impliedEnvironments(settings) { settings.environments = implied }
            try checkSchemes(settings, alreadyAllowsInsecure: false)
            try await context.withClients { store in
                let created = try await store.create(settings)
                try context.printJSON(ClientWithSecret(client: created.client, secret: created.secret))
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
            throw UsageError("unknown client action \"\(action)\" (expected create, list, show, update, rotate-secret or disable)")
        }
    }

    /// Validates every setting given; an empty URL or game id means "clear".
    static func settings(from arguments: Arguments) throws -> ClientSettings {
        var settings = ClientSettings()
        if let name = arguments.single("name") {
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            guard (1...200).contains(trimmed.count) else { throw UsageError("--name must be 1 to 200 characters") }
            settings.name = trimmed
        }
        if let gameID = arguments.single("game-id") {
            if gameID.isEmpty {
                settings.gameID = .some(nil)
            } else {
                guard let number = Int64(gameID), number >= 0 else { throw UsageError("--game-id must be a non-negative integer, got \"\(gameID)\"") }
                settings.gameID = number
            }
        }
        if let list = arguments.single("environments") {
            var environments: [StoreEnvironment] = []
            for part in list.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) {
                guard let environment = StoreEnvironment(rawValue: part) else {
                    throw UsageError("--environments accepts production and sandbox, got \"\(part)\"")
                }
                if !environments.contains(environment) { environments.append(environment) }
            }
            guard !environments.isEmpty else { throw UsageError("--environments needs at least one of production, sandbox") }
            settings.environments = environments
        }
        if let url = arguments.single("refund-callback-url") {
            settings.refundCallbackURL = .some(url.isEmpty ? nil : try httpURL(url, option: "--refund-callback-url"))
        }
        if let format = arguments.single("refund-callback-format") {
            let known = try StartedPlugins.dialects().compactMap(\.refundCallbacks?.format).sorted()
            guard known.contains(format) else {
                throw UsageError("--refund-callback-format must be one of \(known.joined(separator: ", ")), got \"\(format)\"")
            }
            settings.refundCallbackFormat = format
        }
        if let insecure = arguments.single("allow-insecure-url") {
            guard ["on", "off"].contains(insecure) else { throw UsageError("--allow-insecure-url takes no value, or on/off, got \"\(insecure)\"") }
            settings.settings[Client.allowInsecureURLSetting] = .some(insecure == "on" ? ["on"] : nil)
        }
        if let policy = arguments.single("account-mismatch") {
            guard ["flag", "reject"].contains(policy) else { throw UsageError("--account-mismatch must be flag or reject, got \"\(policy)\"") }
            settings.settings[Client.accountMismatchSetting] = [policy]
        }
        if let url = arguments.single("webhook-url") {
            settings.webhookURL = .some(url.isEmpty ? nil : try httpURL(url, option: "--webhook-url"))
        }
        if let url = arguments.single("delivery-url") {
            settings.deliveryURL = .some(url.isEmpty ? nil : try httpURL(url, option: "--delivery-url"))
        }
        try pluginSettings(from: arguments, into: &settings)
        return settings
    }


    /// A well-formed absolute http(s) URL: a host, no credentials, no spaces, at most 2048 bytes.
    private static func httpURL(_ value: String, option: String) throws -> String {
        guard value.utf8.count <= 2048, !value.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true }),
              let url = URLComponents(string: value), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
              let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else { throw UsageError("\(option) must be an https:// URL (http:// with --allow-insecure-url), got \"\(value)\"") }
        return value
    }

    /// Outbound URLs are https unless the client allows plain http (`--allow-insecure-url`).
    static func checkSchemes(_ settings: ClientSettings, alreadyAllowsInsecure: Bool) throws {
        let requested = settings.settings[Client.allowInsecureURLSetting]
        let allows = requested.map { $0 == ["on"] } ?? alreadyAllowsInsecure
        for (option, url) in [("--refund-callback-url", settings.refundCallbackURL), ("--webhook-url", settings.webhookURL),
                              ("--delivery-url", settings.deliveryURL)] {
            guard let url = url ?? nil, url.lowercased().hasPrefix("http://") else { continue }
            guard allows else { throw UsageError("\(option) must be https:// unless the client is given --allow-insecure-url, got \"\(url)\"") }
        }
    }
}

/// What `create` and `rotate-secret` print: the client plus its secret, this once.
struct ClientWithSecret: Encodable {
    let client: Client
    let secret: String

    enum CodingKeys: String, CodingKey { case secret = "client_secret", warning }

    func encode(to encoder: any Encoder) throws {
        try client.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(secret, forKey: .secret)
        try container.encode("client_secret is shown only now; store it securely, it cannot be retrieved again", forKey: .warning)
    }
}
