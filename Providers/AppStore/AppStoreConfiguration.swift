package import Foundation
package import HTTPClient
public import OpenSSLCrypto
public import ReceiptCore

/// The App Store provider's settings, read once from the environment (docs/configuration.md).
public struct AppStoreConfiguration: Sendable {
    package struct ServerAPIKey: Sendable {
        package var keyID: String
        package var issuerID: String
        package var privateKey: PrivateKey

        package init(keyID: String, issuerID: String, privateKey: PrivateKey) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.privateKey = privateKey
        }
    }

    package init(trustRoots: [Certificate]) {
        self.trustRoots = trustRoots
    }

    package enum ReceiptMode: String, Sendable {
        case serverAPI = "server_api"
        case verifyReceipt = "verify_receipt"
    }

    /// Roots for StoreKit 2 signed data (JWS): Apple Root CA - G3 unless overridden.
    public var trustRoots: [Certificate]
    /// Roots StoreKit 1 receipt signatures (PKCS#7) must chain to: Apple Root CA (2006) unless overridden.
    package var receiptTrustRoots: [Certificate] = AppleRootCertificates.defaultReceiptRoots
    package var serverAPIKey: ServerAPIKey?
    package var serverAPIProductionURL = "https://api.storekit.apple.com"
    package var serverAPISandboxURL = "https://api.storekit-sandbox.apple.com"
    public var sharedSecret: String?
    package var verifyReceiptProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
    package var verifyReceiptSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"
    /// How StoreKit 1 receipts are confirmed; nil when neither an API key nor a shared secret is set.
    package var receiptMode: ReceiptMode?
    /// Online revocation (OCSP) checks of App Store certificate chains.
    package var onlineChecks = false
    /// How often the notification history is read back (`RECEIPTGATE_APPSTORE_RECONCILE_INTERVAL`);
    /// nil turns it off. It needs a Server API key.
    package var reconcileInterval: Duration? = .seconds(900)

    /// A variable with a bad value (the shared type: the service reports it as it is).
    public typealias Invalid = ConfigurationInvalid

    public static func fromEnvironment(_ environment: [String: String]) throws -> AppStoreConfiguration {
        let settings = EnvironmentSettings(environment)
        func url(_ name: String, default fallback: String) throws -> String {
            try settings.url(name, default: fallback)
        }

        var configuration = try AppStoreConfiguration(trustRootsFrom: environment)
        configuration.serverAPIKey = try serverAPIKey(settings)
        configuration.serverAPIProductionURL = try url(
            "RECEIPTGATE_APPSTORE_API_PRODUCTION_URL", default: configuration.serverAPIProductionURL)
        configuration.serverAPISandboxURL = try url(
            "RECEIPTGATE_APPSTORE_API_SANDBOX_URL", default: configuration.serverAPISandboxURL)
        configuration.sharedSecret = settings.value("RECEIPTGATE_APPSTORE_SHARED_SECRET")
        configuration.verifyReceiptProductionURL = try url(
            "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_PRODUCTION_URL", default: configuration.verifyReceiptProductionURL)
        configuration.verifyReceiptSandboxURL = try url(
            "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_SANDBOX_URL", default: configuration.verifyReceiptSandboxURL)
        configuration.receiptMode = try receiptMode(
            settings, hasServerAPIKey: configuration.serverAPIKey != nil,
            hasSharedSecret: configuration.sharedSecret != nil)
        configuration.onlineChecks = try onlineChecks(settings)
        configuration.reconcileInterval = try reconcileInterval(settings)
        return configuration
    }

    /// Both root sets, each Apple's unless its variable names files of its own.
    private init(trustRootsFrom environment: [String: String]) throws {
        do {
            self.init(trustRoots: try AppleRootCertificates.configured(environment: environment))
        } catch {
            throw Invalid(variable: "RECEIPTGATE_APPLE_ROOT_CERTS", problem: "\(error)")
        }
        do {
            receiptTrustRoots = try AppleRootCertificates.configuredReceiptRoots(environment: environment)
        } catch {
            throw Invalid(variable: "RECEIPTGATE_APPLE_RECEIPT_ROOT_CERTS", problem: "\(error)")
        }
    }

    /// The App Store Server API key: its three variables together or none of them.
    private static func serverAPIKey(_ settings: EnvironmentSettings) throws -> ServerAPIKey? {
        func value(_ name: String) -> String? { settings.value(name) }
        let keyVariables = [
            "RECEIPTGATE_APPSTORE_API_KEY_ID", "RECEIPTGATE_APPSTORE_API_ISSUER_ID",
            "RECEIPTGATE_APPSTORE_API_KEY_PATH",
        ]
        guard keyVariables.contains(where: { value($0) != nil }) else { return nil }
        guard let keyID = value(keyVariables[0]), let issuerID = value(keyVariables[1]),
            let path = value(keyVariables[2])
        else {
            let missing = keyVariables.first { value($0) == nil } ?? keyVariables[0]
            throw Invalid(
                variable: missing,
                problem: "the App Store Server API needs \(keyVariables.joined(separator: ", ")) together")
        }
        do {
            let loaded = try AppStoreServerAPIClient.Configuration(
                keyID: keyID, issuerID: issuerID, bundleID: "", privateKeyPath: path)
            return ServerAPIKey(keyID: keyID, issuerID: issuerID, privateKey: loaded.privateKey)
        } catch {
            throw Invalid(variable: "RECEIPTGATE_APPSTORE_API_KEY_PATH", problem: "\(error)")
        }
    }

    /// The mode asked for, when its credential is there; else the API when a key is set, else
    /// verifyReceipt when a shared secret is.
    private static func receiptMode(
        _ settings: EnvironmentSettings, hasServerAPIKey: Bool, hasSharedSecret: Bool
    ) throws -> ReceiptMode? {
        guard let mode = settings.value("RECEIPTGATE_APPSTORE_RECEIPT_MODE") else {
            return hasServerAPIKey ? .serverAPI : hasSharedSecret ? .verifyReceipt : nil
        }
        guard let parsed = ReceiptMode(rawValue: mode) else {
            throw Invalid(
                variable: "RECEIPTGATE_APPSTORE_RECEIPT_MODE",
                problem: "must be server_api or verify_receipt, got \"\(mode)\"")
        }
        if parsed == .serverAPI && !hasServerAPIKey {
            throw Invalid(
                variable: "RECEIPTGATE_APPSTORE_RECEIPT_MODE",
                problem: "server_api needs RECEIPTGATE_APPSTORE_API_KEY_ID, _ISSUER_ID and _KEY_PATH")
        }
        if parsed == .verifyReceipt && !hasSharedSecret {
            throw Invalid(
                variable: "RECEIPTGATE_APPSTORE_RECEIPT_MODE",
                problem: "verify_receipt needs RECEIPTGATE_APPSTORE_SHARED_SECRET")
        }
        return parsed
    }

    /// Seconds between notification-history runs: 0 turns them off, else at least 5.
    private static func reconcileInterval(_ settings: EnvironmentSettings) throws -> Duration? {
        guard let raw = settings.value("RECEIPTGATE_APPSTORE_RECONCILE_INTERVAL") else { return .seconds(900) }
        guard let seconds = Int(raw), seconds == 0 || seconds >= 5 else {
            throw Invalid(
                variable: "RECEIPTGATE_APPSTORE_RECONCILE_INTERVAL",
                problem: "must be 0 (off) or a whole number of seconds from 5, got \"\(raw)\"")
        }
        return seconds == 0 ? nil : .seconds(seconds)
    }

    private static func onlineChecks(_ settings: EnvironmentSettings) throws -> Bool {
        switch settings.value("RECEIPTGATE_APPLE_ONLINE_CHECKS")?.lowercased() {
        case nil, "off", "false", "0": false
        case "on", "true", "1": true
        case let other?:
            throw Invalid(variable: "RECEIPTGATE_APPLE_ONLINE_CHECKS", problem: "must be on or off, got \"\(other)\"")
        }
    }

    /// An App Store Server API client for one app (the JWT names the bundle), or nil without a key.
    package func serverAPIClient(
        bundleID: String, http: HTTPClient, now: @escaping @Sendable () -> Date
    ) -> AppStoreServerAPIClient? {
        guard let key = serverAPIKey else { return nil }
        var client = AppStoreServerAPIClient.Configuration(
            keyID: key.keyID, issuerID: key.issuerID, bundleID: bundleID, privateKey: key.privateKey)
        client.productionBaseURL = serverAPIProductionURL
        client.sandboxBaseURL = serverAPISandboxURL
        return AppStoreServerAPIClient(configuration: client, http: http, now: now)
    }
}
