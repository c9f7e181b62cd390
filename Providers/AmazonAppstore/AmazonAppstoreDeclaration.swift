import Foundation
public import ReceiptCore

/// Amazon Appstore as the registry lists it: its package names, the sealed shared secret, the
/// user id every receipt is checked against, and the platform dialects say.
extension AmazonAppstoreProvider {
    public static let packageNameKind = AppIdentifierKind(
        name: "amazon_package_name", flag: "amazon-package-name",
        help: "Amazon Appstore package name; repeat for several")

    /// RVS proves a receipt for one Amazon user (`UserData.getUserId()` in the app).
    package static let userIDField = EvidenceField(
        name: "amazon_user_id", required: true, maxLength: 2048,
        description: "the Amazon user id the app read with the purchase (UserData.getUserId())")

    public static let declaration = StoreDeclaration(
        store: .amazonAppstore, displayName: "Amazon Appstore", identifiers: packageNameKind,
        settings: [
            ClientSettingDeclaration(
                flag: "amazon-shared-secret", key: Setting.sharedSecret, valueName: "SECRET",
                help: "the app's RVS shared secret from the Amazon Developer Console (stored sealed, never shown)",
                sealed: true
            ) { secret in
                let trimmed = secret.trimmingCharacters(in: .whitespacesAndNewlines)
                guard (1...256).contains(trimmed.utf8.count),
                    trimmed.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
                else {
                    throw SettingRejected(
                        "must be the shared secret as the Amazon Developer Console shows it (printable, no spaces)")
                }
                return trimmed
            }
        ],
        evidenceFields: [userIDField],
        // Amazon's apps run on Fire OS and Android; a receipt is proven only with its user id.
        vendorCode: "AMAZON", operatingSystems: [.android], evidenceShapes: [.receiptWithUser],
        openAPI: openAPIPart)

    /// Started from the service's environment (docs/configuration.md, Amazon Appstore).
    public static let plugin = StorePlugin(declaration) { environment in
        try AmazonAppstoreProvider.fromEnvironment(environment.variables, now: environment.now).registration
    }
}
