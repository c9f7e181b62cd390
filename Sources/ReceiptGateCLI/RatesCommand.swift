import Foundation
import ReceiptGate

/// `receiptgate rates set --file rates.csv [--base USD]`: the exchange rates the analytics page
/// adds money up with. The file replaces every rate loaded before.
enum RatesCommand {
    static func run(_ arguments: [String]) async throws {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { throw HelpRequested(text: HelpText.rates) }
            throw UsageError("missing action: set (see --help)")
        }
        guard action == "set" else {
            if action == "help" { throw HelpRequested(text: HelpText.rates) }
            throw UsageError("unknown rates action \"\(action)\" (expected set)")
        }
        let parsed = try Arguments(
            Array(arguments.dropFirst()), options: ["file": .single, "base": .single], help: HelpText.rates)
        _ = try parsed.expectPositionals([])
        guard let path = parsed.single("file") else { throw UsageError("--file is required (see --help)") }
        let base = (parsed.single("base") ?? "USD").uppercased()
        guard base.range(of: "^[A-Z]{3}$", options: .regularExpression) != nil else {
            throw UsageError("--base must be an ISO 4217 currency code such as USD, got \"\(base.prefix(20))\"")
        }
        guard let data = FileManager.default.contents(atPath: path), data.count <= 20_000_000 else {
            throw UsageError("--file: cannot read \(path) (or it is larger than 20 MB)")
        }
        let rates: [CurrencyRates.Rate]
        do {
            rates = try CurrencyRates.parse(String(decoding: data, as: UTF8.self))
        } catch let error as CurrencyRates.FileError {
            throw UsageError("\(path): \(error.description)")
        }
        let loaded = try await ReceiptGateCommand.makeContext().withDatabase { database in
            try await CurrencyRates(pool: database.pool).replace(with: rates, base: base)
        }
        try CommandContext.printJSON(Loaded(base: base, rates: loaded))
    }

    struct Loaded: Encodable {
        let base: String, rates: Int
    }
}
