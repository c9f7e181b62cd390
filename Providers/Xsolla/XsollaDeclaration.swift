import Foundation
public import ReceiptCore

/// Xsolla as the registry lists it: project ids (the apps), the merchant id and API key the
/// transactions report is read with, the project's webhook secret key, and the user-validation
/// policy. A web store: its purchases are made in a browser.
extension XsollaProvider {
    public static let projectIDKind = AppIdentifierKind(
        name: "xsolla_project_id", flag: "xsolla-project-id",
        help: "Xsolla project id (Publisher Account, Project settings); repeat for several")

    public static let declaration = StoreDeclaration(
        store: .xsolla, displayName: "Xsolla", identifiers: projectIDKind,
        settings: [
            ClientSettingDeclaration(
                flag: "xsolla-merchant-id", key: Setting.merchantID, valueName: "ID",
                help:
                    "the Xsolla merchant id (Publisher Account, Company settings) the transactions report is read with"
            ) { id in try numericID(id, what: "merchant id") },
            ClientSettingDeclaration(
                flag: "xsolla-api-key", key: Setting.apiKey, valueName: "KEY",
                help: "an Xsolla API key valid for all the company's projects (stored sealed, never shown)",
                sealed: true
            ) { key in try printable(key, what: "API key") },
            ClientSettingDeclaration(
                flag: "xsolla-webhook-secret", key: Setting.webhookSecret, valueName: "SECRET",
                help: "the project's webhook secret key (Project settings, Webhooks): webhooks are signed with it "
                    + "(stored sealed, never shown)",
                sealed: true
            ) { secret in try printable(secret, what: "webhook secret key") },
            ClientSettingDeclaration(
                flag: "xsolla-known-players-only", key: Setting.knownPlayersOnly, valueName: "on|off",
                help: "answer Xsolla's user validation with valid only for players ReceiptGate knows (default off: "
                    + "any well-formed player id)", input: .onOff),
        ],
        evidenceKinds: [.detected, .transactionID], vendorCode: "XSOLLA", operatingSystems: [.web],
        evidenceShapes: [.purchaseToken],
        transactionIDIsWellFormed: XsollaTransactionID.isWellFormed,
        openAPI: openAPIPart)

    /// Started from the service's environment (RECEIPTGATE_XSOLLA_API_URL,
    /// RECEIPTGATE_XSOLLA_RECONCILE_INTERVAL).
    public static let plugin = StorePlugin(declaration) { environment in
        try XsollaProvider.fromEnvironment(environment.variables, now: environment.now).registration
    }

    static func numericID(_ raw: String, what: String) throws -> String {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...20).contains(trimmed.count), trimmed.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw SettingRejected("must be the numeric \(what) Publisher Account shows")
        }
        return trimmed
    }

    static func printable(_ raw: String, what: String) throws -> String {
        let trimmed = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...512).contains(trimmed.utf8.count),
            trimmed.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
        else { throw SettingRejected("must be the \(what) as Publisher Account shows it (printable, no spaces)") }
        return trimmed
    }
}

/// How ReceiptGate names an Xsolla purchase: Xsolla's numeric transaction id, followed by
/// `/<sku>` for each item of a transaction that bought several.
enum XsollaTransactionID {
    static func isWellFormed(_ id: String) -> Bool { parse(id) != nil }

    /// The transaction id and, when named, the item's SKU.
    static func parse(_ id: String) -> (transaction: String, sku: String?)? {
        let parts = id.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = parts.first, (1...20).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isNumber })
        else { return nil }
        if parts.count == 2 {
            guard !parts[1].isEmpty, Identifier.problem(String(parts[1])) == nil else { return nil }
            return (String(first), String(parts[1]))
        }
        return (String(first), nil)
    }

    static func make(_ transaction: String, sku: String?) -> String {
        sku.map { "\(transaction)/\($0)" } ?? transaction
    }
}
