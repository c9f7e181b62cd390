import Foundation
import ReceiptCore
import ReceiptGate

/// `receiptgate keys rotate`: a new key signs OpenID access tokens from now on; the old one stays
/// in the JWKS until the tokens it signed have expired (RECEIPTGATE_ACCESS_TOKEN_SECONDS).
enum KeysCommand {
    static func run(_ arguments: [String]) async throws {
        guard let action = arguments.first else {
            throw UsageError("keys needs an action: rotate (see receiptgate keys --help)")
        }
        switch action {
        case "--help", "-h":
            throw HelpRequested(text: HelpText.keys)
        case "rotate":
            _ = try Arguments(Array(arguments.dropFirst()), options: [:], help: HelpText.keys).expectPositionals([])
            let context = try ReceiptGateCommand.makeContext()
            try await context.withRepositories { repositories in
                let lifetime = Duration.seconds(context.configuration.accessTokenLifetimeSeconds)
                let (current, retired) = try await repositories.signingKeys.rotate(keepPublished: lifetime)
                try context.printJSON(["current_kid": current, "retired_kid": retired ?? ""])
            }
        default:
            throw UsageError("unknown keys action \"\(action)\" (expected rotate)")
        }
    }
}
