import Foundation
import OpenSSLCrypto
public import ReceiptCore

extension StoreID {
    public static let appStore = StoreID(rawValue: "app_store")
}

/// The App Store as the registry lists it: bundle ids, per-client settings (when a token of a
/// purchase made outside the App Store with no sale is reported; whether consumables are finished
/// from the server; the keys are the service's own, docs/configuration.md), the platforms dialects say, and the account token rule.
extension AppStoreProvider {
    enum Setting {
        /// Seconds after its registration that a token with no sale is reported as such.
        static let externalPurchaseReportAfter = "app_store.external_purchase_report_after"
        /// `on`: consumables are finished from the server after their first claim (Finish Transaction).
        static let finishTransactions = "app_store.finish_transactions"
    }

    /// `72h`, `3d` or seconds: from an hour to Apple's ten days.
    static func reportAfterSeconds(_ text: String) throws -> String {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let units: [Character: Int] = ["d": 86_400, "h": 3600, "s": 1]
        let unit = trimmed.last.flatMap { units[$0] }
        guard let count = Int(unit == nil ? trimmed : String(trimmed.dropLast())),
            case let (seconds, false) = count.multipliedReportingOverflow(by: unit ?? 1),
            (3600...Int(unreportedAfter)).contains(seconds)
        else {
            throw SettingRejected("must be a duration from 1h to 10d (Apple's limit), such as 72h or 3d")
        }
        return String(seconds)
    }

    package static let bundleIDKind = AppIdentifierKind(
        name: "bundle_id", flag: "bundle-id", help: "App Store bundle id; repeat for several")

    public static let declaration = StoreDeclaration(
        store: .appStore, displayName: "App Store", identifiers: bundleIDKind,
        settings: [
            ClientSettingDeclaration(
                flag: "external-purchase-report-after", key: Setting.externalPurchaseReportAfter,
                valueName: "DURATION",
                help:
                    "report an external purchase token with no sale as such this long after it was registered (1h to 10d; default 10d, Apple's limit)",
                check: reportAfterSeconds),
            ClientSettingDeclaration(
                flag: "appstore-finish-transactions", key: Setting.finishTransactions, valueName: "on|off",
                help:
                    "finish consumables from the server after their first claim, so the app is not offered them again (needs the App Store Server API key; default off)",
                input: .onOff),
        ],
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
