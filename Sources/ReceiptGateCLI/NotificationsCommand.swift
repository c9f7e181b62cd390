import Foundation
import ReceiptGate

/// `receiptgate notifications list [--store STORE] [--type TYPE]`: what stores pushed, as
/// `GET /admin/notifications` shows it; `receiptgate notifications raw ID`: one's body as it came.
enum NotificationsCommand {
    static func run(_ arguments: [String]) async throws {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") {
                throw HelpRequested(text: HelpText.notifications)
            }
            throw UsageError("missing action: list (see --help)")
        }
        switch action {
        case "list":
            let parsed = try Arguments(
                Array(arguments.dropFirst()), options: ["store": .single, "type": .single], help: HelpText.notifications
            )
            _ = try parsed.expectPositionals([])
            let store = parsed.single("store"), type = parsed.single("type")
            try await ReceiptGateCommand.makeContext().withRepositories { repositories in
                try CommandContext.printJSON([
                    "notifications": try await repositories.notifications.list(store: store, type: type)
                ])
            }
        case "raw":
            let parsed = try Arguments(Array(arguments.dropFirst()), options: [:], help: HelpText.notifications)
            guard let text = try parsed.expectPositionals(["ID"]).first, let id = Int64(text), id > 0 else {
                throw UsageError("raw takes a notification's id, a number (as list prints it)")
            }
            try await ReceiptGateCommand.makeContext().withRepositories { repositories in
                guard let body = try await repositories.notifications.rawBody(id: id) else {
                    throw UsageError("no notification \(id)")
                }
                FileHandle.standardOutput.write(body)
            }
        case "help":
            throw HelpRequested(text: HelpText.notifications)
        default:
            throw UsageError("unknown notifications action \"\(action)\" (expected list or raw)")
        }
    }
}
