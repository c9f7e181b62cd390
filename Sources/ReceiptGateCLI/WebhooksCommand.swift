import Foundation
import ReceiptGate

/// `receiptgate webhooks list [--failed]` and `receiptgate webhooks redeliver EVENT_ID`.
enum WebhooksCommand {
    static func run(_ arguments: [String]) async throws {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { throw HelpRequested(text: HelpText.webhooks) }
            throw UsageError("missing action: list or redeliver (see --help)")
        }
        let rest = Array(arguments.dropFirst())
        switch action {
        case "list":
            let parsed = try Arguments(
                rest.map { $0 == "--failed" ? "--failed=true" : $0 }, options: ["failed": .single],
                help: HelpText.webhooks)
            _ = try parsed.expectPositionals([])
            try await ReceiptGateCommand.makeContext().withRepositories { repositories in
                try CommandContext.printJSON([
                    "events": try await repositories.outbox.list(failedOnly: parsed.has("failed"))
                ])
            }
        case "redeliver":
            let id = try Arguments(rest, options: [:], help: HelpText.webhooks).expectPositionals(["event_id"])[0]
            guard UUID(uuidString: id) != nil else { throw UsageError("EVENT_ID must be a UUID, got \"\(id)\"") }
            try await ReceiptGateCommand.makeContext().withRepositories { repositories in
                guard try await repositories.outbox.redeliver(eventID: id) else {
                    throw ClientStoreError.invalid(
                        "no webhook event \(id.lowercased()) (see receiptgate webhooks list)")
                }
                try CommandContext.printJSON(["status": "queued", "event_id": id.lowercased()])
            }
        case "--help", "-h", "help":
            throw HelpRequested(text: HelpText.webhooks)
        default:
            throw UsageError("unknown webhooks action \"\(action)\" (expected list or redeliver)")
        }
    }
}
