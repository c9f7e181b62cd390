import Foundation
import Plugins
import ReceiptCore
import ReceiptGate

/// Client settings from the command line: the core's options and each plugin's, as the registry
/// declares them, read and checked by `ClientSettingsInput` (the console's forms use it too).
extension ClientCommand {
    static var input: ClientSettingsInput {
        get throws {
            ClientSettingsInput(
                identifierKinds: Plugins.all.stores.map(\.declaration.identifiers),
                pluginSettings: Plugins.all.clientSettings,
                refundCallbackFormats: try StartedPlugins.dialects().compactMap(\.refundCallbacks?.format).sorted())
        }
    }

    static var pluginOptions: [String: Arguments.Kind] {
        var options: [String: Arguments.Kind] = [:]
        for store in Plugins.all.stores { options[store.declaration.identifiers.flag] = .repeated }
        for (_, declared) in Plugins.all.clientSettings {
            for setting in declared { options[setting.flag] = setting.repeatable ? .repeated : .single }
        }
        return options
    }

    /// Validates every setting given; an empty value means "clear".
    static func settings(from arguments: Arguments) throws -> ClientSettings {
        var values: [String: [String]] = [:]
        for option in settingOptions.keys {
            guard let given = arguments.all(option) else { continue }
            values[option] = try given.map { try fileContents(option: option, $0) }
        }
        let input = try input
        do { return try input.settings(values) } catch { throw UsageError(error.description) }
    }

    /// A setting read from a file is given as its path; the input takes its contents.
    private static func fileContents(option: String, _ value: String) throws -> String {
        guard !value.isEmpty,
            let setting = Plugins.all.clientSettings.lazy.flatMap(\.settings).first(where: { $0.flag == option }),
            case .file(let maxBytes) = setting.input
        else { return value }
        guard let data = FileManager.default.contents(atPath: value), data.count <= maxBytes else {
            throw UsageError("--\(option): cannot read \(value) (or it is over \(maxBytes / 1024) KiB)")
        }
        return String(decoding: data, as: UTF8.self)
    }

    static func checkSchemes(_ settings: ClientSettings, alreadyAllowsInsecure: Bool) throws {
        let input = try input
        do { try input.checkSchemes(settings, alreadyAllowsInsecure: alreadyAllowsInsecure) } catch {
            throw UsageError(error.description)
        }
    }
}
