import Foundation
import ReceiptCore

/// The client form: the core's fields, then a fieldset per plugin with its settings as the
/// registry declares them. Field names: the core's in snake case, a plugin's `setting.<flag>`.
extension Console {
    /// The core's text fields and the option each one is.
    static let coreTextFields: [(field: String, option: String, label: String, hint: String)] = [
        ("name", "name", "Name", "What the operator calls this game or app."),
        ("game_id", "game-id", "Game id", "Clients of one game see each other's purchases. Optional."),
        ("webhook_url", "webhook-url", "Webhook URL", "Where purchase and refund events are posted (https://)."),
        (
            "webhook_batch", "webhook-batch", "Webhook batch",
            "Events one webhook POST may carry (up to 100), as {\"events\": [...]}. Empty or 1: one event a POST."
        ),
        (
            "refund_callback_url", "refund-callback-url", "Refund callback URL",
            "Where refund callbacks go, in the dialect's format. Optional."
        ),
        (
            "delivery_url", "delivery-url", "Delivery URL",
            "Where entitlement deliveries go, if the game wants them. Optional."
        ),
    ]

    /// `shown`: what the fields hold (a client being edited, or a refused form sent back as it was).
    func clientForm(action: String, shown: (any ClientFormValues)?, session: ConsoleSession, button: String) -> HTML {
        let client = shown
        var fields: HTML = ""
        for item in Self.coreTextFields {
            let value = client?.text(item.field) ?? ""
            fields += """
                <div><label for="\(item.field)">\(item.label)</label><input id="\(item.field)" name="\(item.field)" type="\(item.field.hasSuffix("url") ? "url" : "text")" value="\(value)"\(item.field == "name" ? " required" : "")>
                <p class="hint">\(item.hint)</p></div>
                """
        }
        let environments = client?.environments ?? []
        let boxes = StoreEnvironment.allCases.map { environment -> HTML in
            let checked = environments.contains(environment) ? " checked" : ""
            return
                "<input type=\"checkbox\" name=\"environments\" value=\"\(environment.rawValue)\" id=\"environment-\(environment.rawValue)\"\(HTML(markup: checked))> <label class=\"inline\" for=\"environment-\(environment.rawValue)\">\(environment.rawValue)</label> "
        }
        fields +=
            "<fieldset><legend>Environments</legend>\(boxes)<p class=\"hint\">Which store environments this client accepts. New clients default to production.</p></fieldset>"
        fields += choiceFields(client)
        // A fieldset per plugin: a store's with its apps first, then its settings; then each dialect's.
        let storeNames = Set(stores.map(\.declaration.displayName))
        for store in stores {
            let kind = store.declaration.identifiers
            let value = client?.apps(kind).joined(separator: "\n") ?? ""
            let apps: HTML = """
                <div><label for="setting.\(kind.flag)">\(kind.name.replacingOccurrences(of: "_", with: " ")) (one per line)</label>
                <textarea id="setting.\(kind.flag)" name="setting.\(kind.flag)">\(value)</textarea><p class="hint">\(kind.help)</p></div>
                """
            let settings = input.pluginSettings.filter { $0.plugin == store.declaration.displayName }.flatMap(
                \.settings)
            fields +=
                "<fieldset><legend>\(store.declaration.displayName)</legend>\(apps)\(settings.map { settingField($0, client: client) })</fieldset>"
        }
        for (plugin, settings) in input.pluginSettings where !settings.isEmpty && !storeNames.contains(plugin) {
            fields +=
                "<fieldset><legend>\(plugin)</legend>\(settings.map { settingField($0, client: client) })</fieldset>"
        }
        return ConsoleLayout.form(action, session: session, button: button, buttonID: "save", style: "stacked", fields)
    }

    private func choiceFields(_ client: (any ClientFormValues)?) -> HTML {
        let insecure = client?.allowsInsecure == true ? " checked" : ""
        let mismatch = client?.text("account_mismatch") ?? "flag"
        let policies = ["flag", "reject"].map { policy -> HTML in
            "<option value=\"\(policy)\"\(HTML(markup: policy == mismatch ? " selected" : ""))>\(policy)</option>"
        }
        var fields: HTML = """
            <div><input type="checkbox" name="allow_insecure_url" value="on" id="allow_insecure_url"\(HTML(markup: insecure))> <label class="inline" for="allow_insecure_url">Allow plain http:// URLs</label>
            <p class="hint">Only for receivers on a private network.</p></div>
            <div><label for="account_mismatch">When the account token differs</label><select id="account_mismatch" name="account_mismatch">\(policies)</select>
            <p class="hint">flag: record and report it; reject: refuse the purchase.</p></div>
            """
        fields += refundPolicyFields(client)
        let formats = input.refundCallbackFormats
        if formats.count > 1 {
            let current = client?.text("refund_callback_format") ?? ""
            let options = ([""] + formats).map { format -> HTML in
                "<option value=\"\(format)\"\(HTML(markup: format == current ? " selected" : ""))>\(format.isEmpty ? "default" : format)</option>"
            }
            fields +=
                "<div><label for=\"refund_callback_format\">Refund callback format</label><select id=\"refund_callback_format\" name=\"refund_callback_format\">\(options)</select></div>"
        }
        return fields
    }

    /// How the client answers stores' refund requests.
    private func refundPolicyFields(_ client: (any ClientFormValues)?) -> HTML {
        let consent = client?.text("consumption_consent") == "on" ? " checked" : "",
            sample = client?.text("sample_content") == "on" ? " checked" : ""
        let otherwise = client?.text("refund_otherwise") ?? "prorated"
        let preferences = RefundPreference.allCases.map { preference -> HTML in
            "<option value=\"\(preference.rawValue)\"\(HTML(markup: preference.rawValue == otherwise ? " selected" : ""))>\(preference.rawValue)</option>"
        }
        return """
            <fieldset><legend>Refund requests</legend>
            <div><input type="checkbox" name="consumption_consent" value="on" id="consumption_consent"\(HTML(markup: consent))> <label class="inline" for="consumption_consent">The game collects the customer's consent to share consumption data</label>
            <p class="hint">Off: answers tell the store the customer did not consent, and carry no consumption.</p></div>
            <div><label for="refund_decline_at">Decline when consumed at least (percent)</label><input id="refund_decline_at" name="refund_decline_at" type="text" inputmode="numeric" value="\(client?.text("refund_decline_at") ?? "50")">
            <p class="hint">A delivered purchase used this much is answered "decline".</p></div>
            <div><label for="refund_otherwise">Otherwise prefer</label><select id="refund_otherwise" name="refund_otherwise">\(preferences)</select></div>
            <div><input type="checkbox" name="sample_content" value="on" id="sample_content"\(HTML(markup: sample))> <label class="inline" for="sample_content">A free sample or trial was offered before purchase</label></div>
            </fieldset>
            """
    }

    private func settingField(_ setting: ClientSettingDeclaration, client: (any ClientFormValues)?) -> HTML {
        let name = "setting.\(setting.flag)"
        let current = setting.sealed ? "" : (client?.values(of: setting) ?? []).joined(separator: "\n")
        let label = setting.flag.replacingOccurrences(of: "-", with: " ")
        let hint: HTML =
            setting.sealed
            ? "\(setting.help) Secret: never shown again\(client?.hasSecrets == true ? "; leave blank to keep what is set" : "")."
            : "\(setting.help)"
        let control: HTML
        switch setting.input {
        case .onOff:
            let options = ["", "on", "off"].map { value -> HTML in
                "<option value=\"\(value)\"\(HTML(markup: value == current ? " selected" : ""))>\(value.isEmpty ? "not set" : value)</option>"
            }
            control = "<select id=\"\(name)\" name=\"\(name)\">\(options)</select>"
        case .file:
            control =
                "<textarea id=\"\(name)\" name=\"\(name)\" autocomplete=\"off\" spellcheck=\"false\">\(current)</textarea>"
        case .text where setting.repeatable:
            control = "<textarea id=\"\(name)\" name=\"\(name)\">\(current)</textarea>"
        case .text:
            control =
                "<input id=\"\(name)\" name=\"\(name)\" type=\"\(setting.sealed ? "password" : "text")\" value=\"\(current)\" autocomplete=\"off\">"
        }
        let suffix =
            setting.repeatable ? " (one per line)" : (setting.input.isFile ? " (paste the file's contents)" : "")
        return "<div><label for=\"\(name)\">\(label)\(suffix)</label>\(control)<p class=\"hint\">\(hint)</p></div>"
    }

    /// The submitted form as the input's options. Creating, a blank field is not given; editing,
    /// it clears the setting, except a secret one, which a blank field keeps.
    func settingValues(_ form: ConsoleForm, creating: Bool) -> [String: [String]] {
        var values: [String: [String]] = [:]
        for item in Self.coreTextFields {
            guard let value = form[item.field]?.trimmingCharacters(in: .whitespacesAndNewlines),
                !(creating && value.isEmpty)
            else { continue }
            values[item.option] = [value]
        }
        let environments = form.all("environments")
        if !(creating && environments.isEmpty) { values["environments"] = environments.isEmpty ? [""] : environments }
        if form["allow_insecure_url"] == "on" {
            values["allow-insecure-url"] = ["on"]
        } else if !creating {
            values["allow-insecure-url"] = ["off"]
        }
        for (field, option) in [
            ("account_mismatch", "account-mismatch"), ("refund_callback_format", "refund-callback-format"),
            ("refund_decline_at", "refund-decline-at"), ("refund_otherwise", "refund-otherwise"),
        ] {
            if let value = form.text(field) { values[option] = [value] }
        }
        for (field, option) in [("consumption_consent", "consumption-consent"), ("sample_content", "sample-content")] {
            if form[field] == "on" { values[option] = ["on"] } else if !creating { values[option] = ["off"] }
        }
        for kind in input.identifierKinds {
            guard form["setting.\(kind.flag)"] != nil else { continue }
            let lines = form.lines("setting.\(kind.flag)")
            if !(creating && lines.isEmpty) { values[kind.flag] = lines.isEmpty ? [""] : lines }
        }
        for setting in input.pluginSettings.flatMap(\.settings) {
            guard let raw = form["setting.\(setting.flag)"] else { continue }
            let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty && (creating || setting.sealed) { continue }
            values[setting.flag] =
                setting.repeatable ? (text.isEmpty ? [""] : form.lines("setting.\(setting.flag)")) : [text]
        }
        return values
    }
}

extension ClientSettingDeclaration.Input {
    var isFile: Bool { if case .file = self { true } else { false } }
}

/// What the client form shows in its fields: a stored client, or a form sent back with its error.
protocol ClientFormValues {
    func text(_ field: String) -> String?
    var environments: [StoreEnvironment] { get }
    var allowsInsecure: Bool { get }
    func apps(_ kind: AppIdentifierKind) -> [String]
    func values(of setting: ClientSettingDeclaration) -> [String]
    var hasSecrets: Bool { get }
}

extension Client: ClientFormValues {
    func text(_ field: String) -> String? {
        switch field {
        case "name": name
        case "game_id": gameID.map(String.init)
        case "webhook_url": webhookURL
        case "webhook_batch": webhookBatch > 1 ? String(webhookBatch) : nil
        case "refund_callback_url": refundCallbackURL
        case "delivery_url": deliveryURL
        case "account_mismatch": settings[Client.accountMismatchSetting]?.first
        case "refund_callback_format": refundCallbackFormat
        case "consumption_consent": refundPolicy.consumptionConsent ? "on" : nil
        case "sample_content": refundPolicy.sampleContentProvided ? "on" : nil
        case "refund_decline_at": String(refundPolicy.declineAtPercent)
        case "refund_otherwise": refundPolicy.otherwise.rawValue
        default: nil
        }
    }
    var allowsInsecure: Bool { allowsInsecureURLs }
    func apps(_ kind: AppIdentifierKind) -> [String] { appIdentifiers[kind.name] ?? [] }
    func values(of setting: ClientSettingDeclaration) -> [String] { settings[setting.key] ?? [] }
    var hasSecrets: Bool { hasSealedSettings }
}

/// A refused form shown again as it was sent, secret settings left out.
extension ConsoleForm: ClientFormValues {
    var environments: [StoreEnvironment] { all("environments").compactMap(StoreEnvironment.init(rawValue:)) }
    var allowsInsecure: Bool { self["allow_insecure_url"] == "on" }
    func apps(_ kind: AppIdentifierKind) -> [String] { lines("setting.\(kind.flag)") }
    func values(of setting: ClientSettingDeclaration) -> [String] {
        setting.sealed ? [] : [self["setting.\(setting.flag)"] ?? ""]
    }
    var hasSecrets: Bool { false }
}
