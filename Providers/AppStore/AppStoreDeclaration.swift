import Foundation
import OpenSSLCrypto
public import ReceiptCore

extension StoreID {
    public static let appStore = StoreID(rawValue: "app_store")
}

/// The App Store as the registry lists it: bundle ids, no per-client settings (its keys are the
/// service's own, docs/configuration.md), the platforms dialects say, and the account token rule.
extension AppStoreProvider {
    package static let bundleIDKind = AppIdentifierKind(
        name: "bundle_id", flag: "bundle-id", help: "App Store bundle id; repeat for several")

    public static let declaration = StoreDeclaration(
        store: .appStore, displayName: "App Store", identifiers: bundleIDKind,
        // A bare transaction id only where a caller means one (`EvidenceKind`).
        evidenceKinds: [.detected, .transactionID],
        vendorCode: "APPLE", operatingSystems: [.ios], evidenceShapes: [.signedDocument],
        // StoreKit's appAccountToken is a UUID; anything else could never match one.
        accountTokenIsWellFormed: { UUID(uuidString: $0) != nil },
        // Decimal, at most 20 digits: anything else is refused before a lookup is counted.
        transactionIDIsWellFormed: { AppStoreProvider.isTransactionID($0) },
        openAPI: openAPIPart,
        developmentTools: [DevPurchase.tool, DevNotification.tool])

    /// Started from the service's environment (docs/configuration.md, App Store), with the ES256
    /// verifier `RECEIPTGATE_ES256_FIXED_KEY` picks.
    public static let plugin = StorePlugin(declaration) { environment in
        let variable = ES256VerifierSetting.variable
        guard let es256 = ES256VerifierSetting.verifier(for: environment.variables[variable]) else {
            throw AppStoreConfiguration.Invalid(variable: variable, problem: "must be on or off")
        }
        return try AppStoreProvider.fromEnvironment(environment.variables, es256: es256, now: environment.now)
            .registration
    }
}
