import Foundation
public import ReceiptCore

/// Client settings as an operator gives them, by option name and as text, checked once and turned
/// into `ClientSettings`. The command line (`--webhook-url …`) and the console's forms
/// (`webhook_url=…`) both come through here, so a rule (https only, a plugin's value check) has
/// one home. An empty value clears a setting.
public struct ClientSettingsInput: Sendable {
    /// The core's options; each plugin adds its kind of app identifier and its settings.
    public static let coreOptions = [
        "name", "game-id", "environments", "refund-callback-url", "refund-callback-format", "webhook-url",
        "webhook-batch", "delivery-url", "account-mismatch", "allow-insecure-url", "consumption-consent",
        "refund-decline-at",
        "refund-otherwise", "sample-content",
    ]

    public let identifierKinds: [AppIdentifierKind]
    public let pluginSettings: [(plugin: String, settings: [ClientSettingDeclaration])]
    public let refundCallbackFormats: [String]

    public init(
        identifierKinds: [AppIdentifierKind], pluginSettings: [(plugin: String, settings: [ClientSettingDeclaration])],
        refundCallbackFormats: [String]
    ) {
        self.identifierKinds = identifierKinds
        self.pluginSettings = pluginSettings
        self.refundCallbackFormats = refundCallbackFormats
    }

    /// `values`: option name (no `--`) → what was given: one value for a single option, each for a
    /// repeated one; for a setting read from a file, the file's contents. Absent options stay as they are.
    public func settings(_ values: [String: [String]]) throws(InvalidClientSetting) -> ClientSettings {
        var settings = ClientSettings()
        try readCore(values, into: &settings)
        for kind in identifierKinds {
            guard let given = values[kind.flag] else { continue }
            let identifiers = given.filter { !$0.isEmpty }
            for value in identifiers where !AppIdentifierKind.isWellFormed(value) {
                throw InvalidClientSetting(
                    option: kind.flag, problem: "must be letters, digits, '.', '_' or '-', got \"\(value)\"")
            }
            settings.appIdentifiers[kind.name] = .some(identifiers.isEmpty ? nil : identifiers)
        }
        for (_, declared) in pluginSettings {
            for setting in declared {
                guard let given = values[setting.flag] else { continue }
                try Self.apply(setting, given: given, into: &settings)
            }
        }
        return settings
    }

    /// On create, the environments a given plugin setting implies when none were chosen.
    public func impliedEnvironments(_ settings: ClientSettings) -> [StoreEnvironment]? {
        for (_, declared) in pluginSettings {
            for setting in declared {
                guard let implied = setting.impliedEnvironments, case let values?? = settings.settings[setting.key],
                    !values.isEmpty
                else { continue }
                return StoreEnvironment.allCases.filter(implied.contains)
            }
        }
        return nil
    }

    /// Outbound URLs are https unless the client allows plain http (`allow-insecure-url`).
    public func checkSchemes(_ settings: ClientSettings, alreadyAllowsInsecure: Bool) throws(InvalidClientSetting) {
        let allows = settings.settings[Client.allowInsecureURLSetting].map { $0 == ["on"] } ?? alreadyAllowsInsecure
        for (option, url) in [
            ("refund-callback-url", settings.refundCallbackURL), ("webhook-url", settings.webhookURL),
            ("delivery-url", settings.deliveryURL),
        ] {
            guard let url = url ?? nil, url.lowercased().hasPrefix("http://"), !allows else { continue }
            throw InvalidClientSetting(
                option: option,
                problem:
                    "must be https:// unless the client allows insecure URLs (--allow-insecure-url), got \"\(url)\"")
        }
    }

    private func readCore(
        _ values: [String: [String]], into settings: inout ClientSettings
    ) throws(InvalidClientSetting) {
        if let name = values["name"]?.last {
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            guard (1...200).contains(trimmed.count) else {
                throw InvalidClientSetting(option: "name", problem: "must be 1 to 200 characters")
            }
            if let problem = Identifier.problem(trimmed, maxBytes: 800) {
                throw InvalidClientSetting(option: "name", problem: problem)
            }
            settings.name = trimmed
        }
        if let gameID = values["game-id"]?.last {
            if gameID.isEmpty {
                settings.gameID = .some(nil)
            } else {
                guard let number = Int64(gameID), number >= 0 else {
                    throw InvalidClientSetting(
                        option: "game-id", problem: "must be a non-negative integer, got \"\(gameID)\"")
                }
                settings.gameID = number
            }
        }
        try readChoices(values, into: &settings)
        try readRefundPolicy(values, into: &settings)
        try readURLs(values, into: &settings)
    }

    /// How the client answers stores' refund requests (docs/stores.md#refund-requests).
    private func readRefundPolicy(
        _ values: [String: [String]], into settings: inout ClientSettings
    ) throws(InvalidClientSetting) {
        for (option, key) in [
            ("consumption-consent", Client.consumptionConsentSetting), ("sample-content", Client.sampleContentSetting),
        ] {
            guard let value = values[option]?.last else { continue }
            guard ["on", "off", ""].contains(value) else {
                throw InvalidClientSetting(option: option, problem: "takes no value, or on/off, got \"\(value)\"")
            }
            settings.settings[key] = .some(value == "on" ? ["on"] : nil)
        }
        if let percent = values["refund-decline-at"]?.last {
            guard percent.isEmpty || Int(percent).map({ (0...100).contains($0) }) == true else {
                throw InvalidClientSetting(
                    option: "refund-decline-at", problem: "must be a whole percent from 0 to 100, got \"\(percent)\"")
            }
            settings.settings[Client.refundDeclineAtSetting] = .some(percent.isEmpty ? nil : [percent])
        }
        if let preference = values["refund-otherwise"]?.last {
            guard preference.isEmpty || RefundPreference(rawValue: preference) != nil else {
                throw InvalidClientSetting(
                    option: "refund-otherwise",
                    problem: "must be grant, decline, prorated or neutral, got \"\(preference)\"")
            }
            settings.settings[Client.refundOtherwiseSetting] = .some(preference.isEmpty ? nil : [preference])
        }
    }

    private func readChoices(
        _ values: [String: [String]], into settings: inout ClientSettings
    ) throws(InvalidClientSetting) {
        if let list = values["environments"] {
            var environments: [StoreEnvironment] = []
            for part in list.flatMap({ $0.split(separator: ",") }).map({
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            }) {
                guard let environment = StoreEnvironment(rawValue: part) else {
                    throw InvalidClientSetting(
                        option: "environments", problem: "accepts production and sandbox, got \"\(part)\"")
                }
                if !environments.contains(environment) { environments.append(environment) }
            }
            guard !environments.isEmpty else {
                throw InvalidClientSetting(option: "environments", problem: "needs at least one of production, sandbox")
            }
            settings.environments = environments
        }
        if let format = values["refund-callback-format"]?.last {
            guard refundCallbackFormats.contains(format) else {
                throw InvalidClientSetting(
                    option: "refund-callback-format",
                    problem: "must be one of \(refundCallbackFormats.joined(separator: ", ")), got \"\(format)\"")
            }
            settings.refundCallbackFormat = format
        }
        if let insecure = values["allow-insecure-url"]?.last {
            guard ["on", "off"].contains(insecure) else {
                throw InvalidClientSetting(
                    option: "allow-insecure-url", problem: "takes no value, or on/off, got \"\(insecure)\"")
            }
            settings.settings[Client.allowInsecureURLSetting] = .some(insecure == "on" ? ["on"] : nil)
        }
        if let policy = values["account-mismatch"]?.last {
            guard ["flag", "reject"].contains(policy) else {
                throw InvalidClientSetting(
                    option: "account-mismatch", problem: "must be flag or reject, got \"\(policy)\"")
            }
            settings.settings[Client.accountMismatchSetting] = [policy]
        }
    }

    private func readURLs(
        _ values: [String: [String]], into settings: inout ClientSettings
    ) throws(InvalidClientSetting) {
        if let url = values["refund-callback-url"]?.last {
            settings.refundCallbackURL = .some(try Self.httpURL(url, option: "refund-callback-url"))
        }
        if let url = values["webhook-url"]?.last {
            settings.webhookURL = .some(try Self.httpURL(url, option: "webhook-url"))
        }
        if let url = values["delivery-url"]?.last {
            settings.deliveryURL = .some(try Self.httpURL(url, option: "delivery-url"))
        }
        if let size = values["webhook-batch"]?.last {
            // 1 is the default, one event a POST: stored as no setting, as an empty value is.
            let number = Int(size)
            guard size.isEmpty || number.map({ (1...Client.webhookBatchLimit).contains($0) }) == true else {
                throw InvalidClientSetting(
                    option: "webhook-batch",
                    problem: "must be a whole number of events from 1 to \(Client.webhookBatchLimit), got \"\(size)\"")
            }
            settings.settings[Client.webhookBatchSetting] = .some(number.flatMap { $0 > 1 ? [String($0)] : nil })
        }
    }

    /// Nil for empty (clear). Else a well-formed absolute http(s) URL: a host, no credentials, no
    /// spaces or control characters, at most 2048 bytes.
    private static func httpURL(_ value: String, option: String) throws(InvalidClientSetting) -> String? {
        guard !value.isEmpty else { return nil }
        guard value.utf8.count <= 2048,
            !value.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true }),
            let url = URLComponents(string: value), let scheme = url.scheme?.lowercased(),
            scheme == "https" || scheme == "http",
            let host = url.host, !host.isEmpty, url.user == nil, url.password == nil
        else {
            throw InvalidClientSetting(
                option: option, problem: "must be an https:// URL (http:// with --allow-insecure-url), got \"\(value)\""
            )
        }
        return value
    }

    /// Empty values (every value, for a repeated setting) remove the setting; each other is checked by its plugin.
    private static func apply(
        _ setting: ClientSettingDeclaration, given raw: [String], into settings: inout ClientSettings
    ) throws(InvalidClientSetting) {
        let given = setting.repeatable ? raw.filter { !$0.isEmpty } : Array(raw.suffix(1).filter { !$0.isEmpty })
        guard !given.isEmpty else {
            if setting.sealed {
                settings.sealedSettings[setting.key] = .some(nil)
            } else {
                settings.settings[setting.key] = .some(nil)
            }
            return
        }
        var values: [String] = []
        for value in given {
            if case .onOff = setting.input, !["on", "off"].contains(value) {
                throw InvalidClientSetting(option: setting.flag, problem: "must be on or off, got \"\(value)\"")
            }
            do { values.append(try setting.check(value)) } catch {
                throw InvalidClientSetting(option: setting.flag, problem: "\(error)")
            }
        }
        if setting.sealed {
            settings.sealedSettings[setting.key] = values.joined(separator: "\n")
        } else {
            settings.settings[setting.key] = values
        }
    }
}

/// A client setting that was refused: which option, and what is wrong with the value.
public struct InvalidClientSetting: Error, Sendable, CustomStringConvertible {
    public let option: String
    public let problem: String

    public init(option: String, problem: String) {
        self.option = option
        self.problem = problem
    }

    /// As the command line says it: `--webhook-url must be …`.
    public var description: String { "--\(option) \(problem)" }
}
