import Foundation
import Plugins
import ReceiptCore
import ReceiptGate

/// Client settings the plugins declare (`Plugins.all`): each store's kind of app identifier and
/// each plugin's own settings, read, checked and stored the same way for every plugin.
extension ClientCommand {
    static var pluginOptions: [String: Arguments.Kind] {
        var options: [String: Arguments.Kind] = [:]
        for store in Plugins.all.stores { options[store.declaration.identifiers.flag] = .repeated }
        for (_, declared) in Plugins.all.clientSettings {
            for setting in declared { options[setting.flag] = setting.repeatable ? .repeated : .single }
        }
        return options
    }

    static func pluginSettings(from arguments: Arguments, into settings: inout ClientSettings) throws {
        for store in Plugins.all.stores {
            let kind = store.declaration.identifiers
            guard let values = arguments.all(kind.flag) else { continue }
            settings.appIdentifiers[kind.name] = try values.map { value in
                guard AppIdentifierKind.isWellFormed(value) else {
                    throw UsageError("--\(kind.flag) must be letters, digits, '.', '_' or '-', got \"\(value)\"")
                }
                return value
            }
        }
        for (_, declared) in Plugins.all.clientSettings {
            for setting in declared { try apply(setting, from: arguments, into: &settings) }
        }
    }

    /// The environments a setting given on create implies, when `--environments` is not given.
    static func impliedEnvironments(_ settings: ClientSettings) -> [StoreEnvironment]? {
        for (_, declared) in Plugins.all.clientSettings {
            for setting in declared {
                guard let implied = setting.impliedEnvironments, case let values?? = settings.settings[setting.key], !values.isEmpty else { continue }
                return StoreEnvironment.allCases.filter(implied.contains)
            }
        }
        return nil
    }

    /// An empty value (every value empty, for a repeated setting) removes the setting.
    private static func apply(_ setting: ClientSettingDeclaration, from arguments: Arguments, into settings: inout ClientSettings) throws {
        let option = "--\(setting.flag)"
        let given: [String]
        if setting.repeatable {
            guard let all = arguments.all(setting.flag) else { return }
            given = all.filter { !$0.isEmpty }
        } else {
            guard let one = arguments.single(setting.flag) else { return }
            given = one.isEmpty ? [] : [one]
        }
        guard !given.isEmpty else {
            if setting.sealed { settings.sealedSettings[setting.key] = .some(nil) } else { settings.settings[setting.key] = .some(nil) }
            return
        }
        let values = try given.map { try value(of: setting, $0, option: option) }
        if setting.sealed {
            settings.sealedSettings[setting.key] = values.joined(separator: "\n")
        } else {
            settings.settings[setting.key] = values
        }
    }

    private static func value(of setting: ClientSettingDeclaration, _ raw: String, option: String) throws -> String {
        var value = raw
        switch setting.input {
        case .text:
            break
        case .onOff:
            guard ["on", "off"].contains(raw) else { throw UsageError("\(option) must be on or off, got \"\(raw)\"") }
        case .file(let maxBytes):
            guard let data = FileManager.default.contents(atPath: raw), data.count <= maxBytes else {
                throw UsageError("\(option): cannot read \(raw) (or it is over \(maxBytes / 1024) KiB)")
            }
            value = String(decoding: data, as: UTF8.self)
        }
        do { return try setting.check(value) } catch { throw UsageError("\(option) \(error)") }
    }
}
