import Foundation
public import ReceiptCore

/// Steam as the registry lists it: the game's Steam app id as its app, its sealed publisher key,
/// its sandbox switch, the service's order id as evidence, and the desktop systems.
extension SteamProvider {
    public static let appKind = AppIdentifierKind(
        name: "steam_app_id", flag: "steam-app-id",
        help: "the game's Steam app id (a number); its in-game purchases are started with POST /v1/orders")

    public static let declaration = StoreDeclaration(
        store: .steam, displayName: "Steam", identifiers: appKind,
        settings: [
            ClientSettingDeclaration(
                flag: "steam-publisher-key", key: Setting.publisherKey, valueName: "KEY",
                help: "the publisher Web API key with microtransaction permission (stored sealed, never shown)",
                sealed: true
            ) { key in
                let trimmed = key.trimmingCharacters(in: .whitespacesAndNewlines)
                // Valve's keys are 32 hexadecimal digits; anything plainly not a key is refused.
                guard (16...128).contains(trimmed.utf8.count),
                    trimmed.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.alphanumerics.contains($0) })
                else { throw SettingRejected("must be a Steam publisher Web API key (hexadecimal digits)") }
                return trimmed
            },
            ClientSettingDeclaration(
                flag: "steam-sandbox", key: Setting.sandbox, valueName: "on|off",
                help: "start and finish Steam orders with ISteamMicroTxnSandbox (nothing is charged; purchases are "
                    + "recorded as sandbox)",
                input: .onOff),
            ClientSettingDeclaration(
                flag: "steam-refuse-banned", key: Setting.refuseBanned, valueName: "on|off",
                help: "refuse a Steam session ticket whose owner is VAC- or publisher-banned (default off: the game "
                    + "is told and decides)",
                input: .onOff),
            ClientSettingDeclaration(
                flag: "steam-require-ticket", key: Setting.requireTicket, valueName: "on|off",
                help:
                    "start a Steam order only for a Steam ID proven by a session ticket (POST /v1/steam/authenticate) "
                    + "in the last hour (default off: the game's signed request vouches for it)",
                input: .onOff),
        ],
        vendorCode: "STEAM", operatingSystems: [.windows, .macos, .linux], evidenceShapes: [.purchaseToken],
        recognizesEvidence: { _ in false },
        openAPI: openAPIPart,
        orderAccountField: EvidenceField(
            name: "steamid", required: true, maxLength: 20,
            description: "the player's 64-bit Steam ID (decimal), who approves the order in the Steam overlay"))

    /// Started from the service's environment (RECEIPTGATE_STEAM_API_URL, RECEIPTGATE_STEAM_REPORT_INTERVAL).
    public static let plugin = StorePlugin(declaration) { environment in
        try SteamProvider.fromEnvironment(environment.variables, now: environment.now).registration
    }
}
