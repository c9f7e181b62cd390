import Foundation
public import ReceiptCore

/// Stripe as the registry lists it: the client's Stripe account as its app, its sealed API key
/// and webhook signing secret, its dispute policy, a Checkout Session id as evidence, and the web
/// as its platform.
extension StripeProvider {
    public static let accountKind = AppIdentifierKind(
        name: "stripe_account", flag: "stripe-account",
        help: "the Stripe account id (acct_…) the web shop sells through; its webhook endpoint is "
            + "/v1/notifications/stripe/<client id>")

    public static let declaration = StoreDeclaration(
        store: .stripe, displayName: "Stripe", identifiers: accountKind,
        settings: [
            ClientSettingDeclaration(
                flag: "stripe-api-key", key: Setting.apiKey, valueName: "KEY",
                help: "the account's secret key (sk_…) or a restricted key (rk_…) that may read Checkout Sessions, "
                    + "Payment Intents, Charges, Disputes, Subscriptions, Invoices and Events (stored sealed, never shown)",
                sealed: true
            ) { key in
                let trimmed = key.trimmingCharacters(in: .whitespacesAndNewlines)
                guard trimmed.hasPrefix("sk_") || trimmed.hasPrefix("rk_"), (8...512).contains(trimmed.utf8.count),
                    trimmed.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
                else {
                    throw SettingRejected("must be a Stripe secret key (sk_…) or restricted key (rk_…)")
                }
                return trimmed
            },
            ClientSettingDeclaration(
                flag: "stripe-webhook-secret", key: Setting.webhookSecret, valueName: "WHSEC",
                help: "the webhook endpoint's signing secret (whsec_…); two, comma-separated, while one is rolled "
                    + "(stored sealed, never shown)",
                sealed: true
            ) { value in
                let secrets = StripeSignature.secrets(value)
                guard (1...2).contains(secrets.count),
                    secrets.allSatisfy({
                        $0.hasPrefix("whsec_") && $0.utf8.count <= 256
                            && $0.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }
                    })
                else {
                    throw SettingRejected("must be one or two (comma-separated) webhook signing secrets (whsec_…)")
                }
                return secrets.joined(separator: ",")
            },
            ClientSettingDeclaration(
                flag: "revoke-on-dispute", key: Setting.revokeOnDispute, valueName: "on|off",
                help: "revoke a Stripe purchase as soon as its payment is disputed, before the dispute is decided "
                    + "(default off: revoked only when the dispute is lost)",
                input: .onOff),
        ],
        vendorCode: "STRIPE", operatingSystems: [.web], evidenceShapes: [.purchaseToken],
        recognizesEvidence: { $0.hasPrefix("cs_") },
        openAPI: openAPIPart)

    /// Started from the service's environment (RECEIPTGATE_STRIPE_API_URL,
    /// RECEIPTGATE_STRIPE_RECONCILE_INTERVAL).
    public static let plugin = StorePlugin(declaration) { environment in
        try StripeProvider.fromEnvironment(environment.variables, now: environment.now).registration
    }
}
