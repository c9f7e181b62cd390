import Foundation
import Plugins
import ReceiptCore
import ReceiptGate

/// `receiptgate dev <tool> ...`: the development helpers the registered stores offer (signing a
/// test purchase with a test root, ...), for trying the service out on a laptop.
enum DevCommand {
    static var tools: [DevelopmentTool] { Plugins.all.stores.flatMap(\.declaration.developmentTools) }

    static var help: String {
        "Usage: receiptgate dev <tool> [options]\n\nDevelopment helpers for trying ReceiptGate out without a device or a store account:\n"
            + tools.map { "  \($0.name.padding(toLength: 14, withPad: " ", startingAt: 0)) \($0.summary)\n" }.joined()
            + "\nSee `receiptgate dev <tool> --help`."
    }

    /// The service the tools work with, from the settings `receiptgate serve` reads.
    static func settings() throws -> DevelopmentSettings {
        let configuration = try ServiceConfiguration.fromEnvironment()
        let environment = ProcessInfo.processInfo.environment
        let host = ["0.0.0.0", "::"].contains(configuration.host) ? "127.0.0.1" : configuration.host
        let hostInURL = host.contains(":") ? "[\(host)]" : host
        let url =
            environment["RECEIPTGATE_URL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "http://\(hostInURL):\(configuration.port)"
        return DevelopmentSettings(dataDirectory: configuration.dataDirectory, serviceURL: url)
    }

    static func run(_ arguments: [String]) async throws {
        guard let name = arguments.first, !name.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { throw HelpRequested(text: help) }
            throw UsageError("missing tool: \(tools.map(\.name).joined(separator: ", ")) (see receiptgate dev --help)")
        }
        if name == "help" { throw HelpRequested(text: help) }
        guard let tool = tools.first(where: { $0.name == name }) else {
            throw UsageError("unknown dev tool \"\(name)\" (expected \(tools.map(\.name).joined(separator: ", ")))")
        }
        let parsed = try Arguments(
            Array(arguments.dropFirst()), options: Dictionary(uniqueKeysWithValues: tool.options.map { ($0, .single) }),
            help: tool.help)
        _ = try parsed.expectPositionals([])
        let options = Dictionary(
            uniqueKeysWithValues: tool.options.compactMap { option in parsed.single(option).map { (option, $0) } })
        let result: (output: String, notices: [String])
        do {
            result = try await tool.run(options, try settings())
        } catch let rejected as SettingRejected {
            throw UsageError(rejected.description)
        }
        // Notices go to stderr so that stdout is only the tool's output (`> purchase.jws` keeps just the token).
        FileHandle.standardError.write(Data(result.notices.map { $0 + "\n" }.joined().utf8))
        FileHandle.standardOutput.write(Data((result.output + "\n").utf8))
    }
}
