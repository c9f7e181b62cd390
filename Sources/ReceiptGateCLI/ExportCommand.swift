import Foundation
import ReceiptCore
import ReceiptGate

/// `receiptgate export transactions --since … --until … [--client …] [--environment …]`: the
/// ledger's purchases and refunds of a range as CSV on standard output, streamed.
enum ExportCommand {
    static func run(_ arguments: [String]) async throws {
        guard let what = arguments.first, !what.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { throw HelpRequested(text: HelpText.export) }
            throw UsageError("missing what to export: transactions (see --help)")
        }
        guard what == "transactions" else {
            if what == "help" { throw HelpRequested(text: HelpText.export) }
            throw UsageError("unknown export \"\(what)\" (expected transactions)")
        }
        let range = try parse(Array(arguments.dropFirst()))
        let output = FileHandle.standardOutput
        try await ReceiptGateCommand.makeContext().withDatabase { database in
            _ = try await LedgerExport(pool: database.pool).write(range) { text in
                try output.write(contentsOf: Data(text.utf8))
            }
        }
    }

    /// Every mistake is a usage error, found before the database is opened.
    static func parse(_ arguments: [String]) throws -> LedgerExport.Range {
        let parsed = try Arguments(
            arguments, options: ["since": .single, "until": .single, "client": .single, "environment": .single],
            help: HelpText.export)
        _ = try parsed.expectPositionals([])
        guard let sinceText = parsed.single("since") else { throw UsageError("--since is required (see --help)") }
        guard let untilText = parsed.single("until") else { throw UsageError("--until is required (see --help)") }
        let since = try time(sinceText, flag: "since"), until = try time(untilText, flag: "until")
        guard since < until else { throw UsageError("--since must be before --until (--until is exclusive)") }
        let client = parsed.single("client")
        if let client, let problem = Identifier.problem(client) { throw UsageError("--client: \(problem)") }
        var environment: StoreEnvironment? = .production
        if let text = parsed.single("environment") {
            if text == "all" {
                environment = nil
            } else {
                guard let known = StoreEnvironment(rawValue: text) else {
                    throw UsageError("--environment must be production, sandbox or all, got \"\(text)\"")
                }
                environment = known
            }
        }
        return LedgerExport.Range(since: since, until: until, clientID: client, environment: environment)
    }

    /// An RFC 3339 time (`2026-11-01T00:00:00Z`, fractions and offsets allowed) or a date (its UTC midnight).
    static func time(_ text: String, flag: String) throws -> Date {
        if let date = LedgerExport.day(text) { return date }
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard text.count <= 40, let date = plain.date(from: text) ?? fractional.date(from: text) else {
            throw UsageError(
                "--\(flag) must be an RFC 3339 time such as 2026-11-01T00:00:00Z or a date such as 2026-11-01, got \"\(text.prefix(60))\""
            )
        }
        return date
    }
}
