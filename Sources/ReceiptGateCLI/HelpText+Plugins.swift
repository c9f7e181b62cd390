import Plugins
import ReceiptCore

extension HelpText {
    /// Each plugin's client settings under its name, as the registry declares them.
    static let pluginSettingsHelp: String = {
        var text = "\nPlugin settings:\n"
        func line(_ option: String, _ help: String) {
            let padded = option.count < 34 ? option + String(repeating: " ", count: 34 - option.count) : option + "  "
            text += "    " + padded + help + "\n"
        }
        for store in Plugins.all.stores {
            let declaration = store.declaration
            text += "  \(declaration.displayName) (store \(declaration.store)):\n"
            line("--\(declaration.identifiers.flag) ID", declaration.identifiers.help)
            for setting in declaration.settings { line("--\(setting.flag) \(setting.valueName)", help(setting)) }
        }
        for dialect in Plugins.all.dialects where !dialect.settings.isEmpty {
            text += "  \(dialect.displayName) (dialect):\n"
            for setting in dialect.settings { line("--\(setting.flag) \(setting.valueName)", help(setting)) }
        }
        return text
    }()

    private static func help(_ setting: ClientSettingDeclaration) -> String {
        var help = setting.help
        if let implied = setting.impliedEnvironments {
            help +=
                "; on create, implies --environments "
                + StoreEnvironment.allCases.filter(implied.contains).map(\.rawValue).joined(separator: ",")
        }
        return help
    }
}
