import Foundation
import OpenSSLCrypto
public import ReceiptCore

extension StoreID {
    package static let googlePlay = StoreID(rawValue: "google_play")
}

/// Google Play as the registry lists it: package names, the per-client settings (a sealed
/// service-account key, the licensing key, two switches), and the platforms dialects say.
extension GooglePlayProvider {
    public static let packageNameKind = AppIdentifierKind(
        name: "package_name", flag: "package-name",
        help: "Google Play package name; repeat for several")

    public static let declaration = StoreDeclaration(
        store: .googlePlay, displayName: "Google Play", identifiers: packageNameKind,
        settings: [
            ClientSettingDeclaration(
                flag: "google-service-account-key", key: Setting.serviceAccountKey, valueName: "PATH",
                help: "Google service-account JSON key for this client's apps (stored sealed, never shown)",
                input: .file(maxBytes: 64 * 1024), sealed: true
            ) { json in
                do { _ = try ServiceAccountKey(json: Data(json.utf8)) } catch {
                    throw SettingRejected("is not a usable service-account key: \(error)")
                }
                return json
            },
            ClientSettingDeclaration(
                flag: "google-license-key", key: Setting.licenseKey, valueName: "BASE64",
                help: "Play licensing public key: purchase JSON signatures are checked locally too"
            ) { key in
                guard let der = Base64.decodeLenient(key), let parsed = try? PublicKey(subjectPublicKeyInfo: der),
                    parsed.isRSA
                else {
                    throw SettingRejected("must be the base64 RSA public key from Play Console (Monetization setup)")
                }
                return key.filter { !$0.isWhitespace }
            },
            ClientSettingDeclaration(
                flag: "google-acknowledge", key: Setting.acknowledge, valueName: "on|off",
                help: "acknowledge Google Play purchases after recording them (default on)", input: .onOff),
            ClientSettingDeclaration(
                flag: "google-consume", key: Setting.consume, valueName: "on|off",
                help: "consume one-time products instead of acknowledging them (default off)", input: .onOff),
        ],
        vendorCode: "GOOGLE", operatingSystems: [.android], evidenceShapes: [.purchaseToken, .purchaseData],
        // A Unity IAP receipt names its store; a Play purchase JSON carries Play's order id.
        recognizesEvidence: GooglePlayEvidence.isUnmistakablyPlays,
        openAPI: openAPIPart)

    /// Started from the service's environment (docs/configuration.md, Google Play).
    public static let plugin = StorePlugin(declaration) { environment in
        try GooglePlayProvider.fromEnvironment(environment.variables, now: environment.now).registration
    }
}
