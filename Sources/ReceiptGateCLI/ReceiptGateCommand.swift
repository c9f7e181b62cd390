import Dispatch
import Foundation
import ReceiptCore
import ReceiptGate

@main
enum ReceiptGateCommand {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        exit(await run(arguments))
    }

    /// Exit codes: 0 success, 1 failure while running, 2 bad arguments, 78 bad configuration.
    static func run(_ arguments: [String]) async -> Int32 {
        do {
            guard let command = arguments.first else { throw HelpRequested(text: HelpText.main) }
            let rest = Array(arguments.dropFirst())
            switch command {
            case "--help", "-h", "help":
                throw HelpRequested(text: HelpText.main)
            case "version", "--version":
                _ = try Arguments(rest, options: [:], help: HelpText.version).expectPositionals([])
                try CommandContext.printJSON(["version": ReceiptGateVersion.current])
                return 0
            case "serve":
                _ = try Arguments(rest, options: [:], help: HelpText.serve).expectPositionals([])
                return try await ServeCommand.run(context: try makeContext(creating: true))
            case "init":
                _ = try Arguments(rest, options: [:], help: HelpText.initialize).expectPositionals([])
                try await InitCommand.run(context: try makeContext(creating: true))
                return 0
            case "migrate":
                _ = try Arguments(rest, options: [:], help: HelpText.migrate).expectPositionals([])
                let context = try makeContext()
                let applied = try await context.withDatabase(migrating: false) { try await $0.migrate() }
                try context.printJSON(["applied": applied])
                return 0
            case "openapi":
                _ = try Arguments(rest, options: [:], help: HelpText.openAPI).expectPositionals([])
                print(try openAPIDocument())
                return 0
            case "webhooks":
                try await WebhooksCommand.run(rest)
                return 0
            case "notifications":
                try await NotificationsCommand.run(rest)
                return 0
            case "products":
                try await ProductsCommand.run(rest)
                return 0
            case "reconcile":
                return try await ReconcileCommand.run(rest)
            case "export":
                try await ExportCommand.run(rest)
                return 0
            case "rates":
                try await RatesCommand.run(rest)
                return 0
            case "keys":
                try await KeysCommand.run(rest)
                return 0
            case "dev":
                try await DevCommand.run(rest)
                return 0
            case "client":
                // Parse the arguments before touching the database: usage errors must not start it.
                try await ClientCommand.run(rest, context: LazyContext())
                return 0
            default:
                throw UsageError(
                    "unknown command \"\(command)\" (expected serve, init, migrate, version, openapi, client, products, webhooks, notifications, reconcile, export, rates, keys or dev; see --help)"
                )
            }
        } catch let help as HelpRequested {
            print(help.text)
            return 0
        } catch let usage as UsageError {
            printError(usage.description)
            return 2
        } catch let invalid as ServiceConfiguration.Invalid {
            printError("configuration error: \(invalid.description)")
            return 78
        } catch {
            printError(String(describing: error))
            return 1
        }
    }

    /// What the service serves at /openapi.yaml: the core's part with every plugin's.
    static func openAPIDocument() throws -> String {
        let configuration = try ServiceConfiguration.fromEnvironment()
        guard
            let document = try OpenAPIDocument.served(
                configuredPath: configuration.openAPIPath, stores: try StartedPlugins.stores().map(\.declaration),
                dialects: try StartedPlugins.dialects())
        else {
            throw UsageError("openapi.yaml was not found; set RECEIPTGATE_OPENAPI_PATH")
        }
        return document
    }

    static func makeContext(creating: Bool = false) throws -> CommandContext {
        let configuration = try ServiceConfiguration.fromEnvironment()
        return CommandContext(
            configuration: configuration, logger: Logger(minimumLevel: configuration.logLevel), creating: creating)
    }

    static func printError(_ message: String) {
        let line = "receiptgate: error: " + message.replacingOccurrences(of: "\n", with: " ") + "\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
