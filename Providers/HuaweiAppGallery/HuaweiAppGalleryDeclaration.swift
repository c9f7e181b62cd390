import Foundation
public import ReceiptCore

/// Huawei AppGallery as the registry lists it: package names, the app's credentials (the app id
/// and sealed app secret from AppGallery Connect), the IAP public key its purchase data is checked
/// with, the subscription id a bare token needs, and the platform dialects say.
extension HuaweiAppGalleryProvider {
    public static let packageNameKind = AppIdentifierKind(
        name: "huawei_package_name", flag: "huawei-package-name",
        help: "Huawei AppGallery package name; repeat for several")

    /// A bare subscription token is read from the subscription service, which needs the
    /// subscription id beside it (the InAppPurchaseData JSON carries its own). A one-time product
    /// needs the native body's `product_id` (or the JSON's `productId`).
    package static let subscriptionIDField = EvidenceField(
        name: "huawei_subscription_id", required: false, maxLength: 256,
        description: "the subscriptionId of a Huawei subscription sent as a bare purchase token")

    public static let declaration = StoreDeclaration(
        store: .huaweiAppGallery, displayName: "Huawei AppGallery", identifiers: packageNameKind,
        settings: [
            ClientSettingDeclaration(
                flag: "huawei-app-id", key: Setting.appID, valueName: "APP_ID",
                help: "the app's App ID from AppGallery Connect (OAuth client id of its IAP calls)"
            ) { id in
                let trimmed = id.trimmingCharacters(in: .whitespacesAndNewlines)
                guard (1...32).contains(trimmed.count), trimmed.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                    throw SettingRejected("must be the numeric App ID AppGallery Connect shows (App information)")
                }
                return trimmed
            },
            ClientSettingDeclaration(
                flag: "huawei-app-secret", key: Setting.appSecret, valueName: "SECRET",
                help: "the app's App secret from AppGallery Connect (stored sealed, never shown)", sealed: true
            ) { secret in
                let trimmed = secret.trimmingCharacters(in: .whitespacesAndNewlines)
                guard (1...256).contains(trimmed.utf8.count),
                    trimmed.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
                else {
                    throw SettingRejected(
                        "must be the App secret as AppGallery Connect shows it (printable, no spaces)")
                }
                return trimmed
            },
            ClientSettingDeclaration(
                flag: "huawei-iap-public-key", key: Setting.iapPublicKey, valueName: "BASE64",
                help:
                    "the app's IAP public key (AppGallery Connect, In-App Purchases): Huawei's signed purchase data is checked with it"
            ) { key in
                let compact = key.filter { !$0.isWhitespace }
                do { _ = try HuaweiIAPKey(base64: compact) } catch {
                    throw SettingRejected(
                        "\(error); it must be the base64 RSA public key (2048 bits or more) AppGallery Connect shows")
                }
                return compact
            },
        ],
        evidenceFields: [subscriptionIDField],
        vendorCode: "HUAWEI", operatingSystems: [.android], evidenceShapes: [.purchaseToken, .purchaseData],
        recognizesEvidence: HuaweiEvidence.isUnmistakablyHuaweis,
        openAPI: openAPIPart)

    /// Started from the service's environment (RECEIPTGATE_HUAWEI_OAUTH_URL, RECEIPTGATE_HUAWEI_ORDER_URL,
    /// RECEIPTGATE_HUAWEI_CANCELLED_POLL_SECONDS, RECEIPTGATE_HUAWEI_CANCELLED_POLL_SITES).
    public static let plugin = StorePlugin(declaration) { environment in
        try HuaweiAppGalleryProvider.fromEnvironment(environment.variables, now: environment.now).registration
    }
}
