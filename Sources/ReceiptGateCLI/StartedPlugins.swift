import Foundation
import Plugins
import ReceiptCore

/// The registry's plugins started from the environment. A bad setting throws
/// `ConfigurationInvalid`, which stops start-up naming the variable.
enum StartedPlugins {
    /// The machine's clock: the one a command hands its plugins and its service.
    static let clock: @Sendable () -> Date = { Date() }

    static func stores(_ environment: PluginEnvironment = PluginEnvironment()) throws -> [StoreRegistration] {
        try Plugins.all.stores.map { try $0.start(environment) }
    }

    static func dialects(_ environment: PluginEnvironment = PluginEnvironment()) throws -> [any DialectProvider] {
        try Plugins.all.dialects.map { try $0.start(environment) }
    }
}
