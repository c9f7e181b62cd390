import Foundation
import Plugins
import ReceiptCore
import ReceiptGate

/// `receiptgate reconcile --store STORE [--since TIME]`: one reconciliation run by hand.
enum ReconcileCommand {
    static func run(_ arguments: [String]) async throws -> Int32 {
        let parsed = try Arguments(arguments, options: ["store": .single, "since": .single], help: HelpText.reconcile)
        _ = try parsed.expectPositionals([])
        guard let store = parsed.single("store"), !store.isEmpty else {
            throw UsageError("--store is required (a store id, as `receiptgate client create --help` lists them)")
        }
        let since = try parsed.single("since").map { text -> Date in
            guard let date = ISO8601DateFormatter().date(from: text) else {
                throw UsageError("--since must be an ISO 8601 time such as 2026-11-01T00:00:00Z, got \"\(text)\"")
            }
            guard date <= StartedPlugins.clock() else { throw UsageError("--since is in the future: \(text)") }
            return date
        }
        let plugins = PluginEnvironment(now: StartedPlugins.clock)
        let providers = try StartedPlugins.stores(plugins)
        guard providers.contains(where: { $0.store.rawValue == store }) else {
            throw UsageError(
                "unknown store \"\(store)\" (expected one of \(providers.map(\.store.rawValue).joined(separator: ", ")))"
            )
        }
        let context = try ReceiptGateCommand.makeContext()
        return try await context.withDatabase { database in
            let service = try Service(
                configuration: context.configuration, logger: context.logger, database: database, stores: providers,
                dialects: try StartedPlugins.dialects(plugins), creatingMasterKey: context.creating, now: plugins.now)
            let report = try await service.reconcile(store: StoreID(rawValue: store), since: since)
            try context.printJSON(report)
            return report.failed ? 1 : 0
        }
    }
}
