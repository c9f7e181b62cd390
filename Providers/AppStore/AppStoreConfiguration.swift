public import Crypto
import Foundation
public import ReceiptCore
public import HTTPClient

/// The App Store provider's settings, read once from the environment (docs/configuration.md).
public struct AppStoreConfiguration: Sendable {
    public struct ServerAPIKey: Sendable {
        public var keyID: String
        public var issuerID: String
        public var privateKey: PrivateKey

        public init(keyID: String, issuerID: String, privateKey: PrivateKey) {
            self.keyID = keyID
            self.issuerID = issuerID
            self.privateKey = privateKey
        }
    }

    public init(trustRoots: [Certificate]) {
        self.trustRoots = trustRoots
    }

    public enum ReceiptMode: String, Sendable {
        case serverAPI = "server_api"
        case verifyReceipt = "verify_receipt"
    }

    /// Roots for StoreKit 2 signed data (JWS): Apple Root CA - G3 unless overridden.
    public var trustRoots: [Certificate]
    /// Roots StoreKit 1 receipt signatures (PKCS#7) must chain to: Apple Root CA (2006) unless overridden.
    public var receiptTrustRoots: [Certificate] = AppleRootCertificates.defaultReceiptRoots
    public var serverAPIKey: ServerAPIKey?
    public var serverAPIProductionURL = "https://api.storekit.itunes.apple.com"
    public var serverAPISandboxURL = "https://api.storekit-sandbox.itunes.apple.com"
    public var sharedSecret: String?
    public var verifyReceiptProductionURL = "https://buy.itunes.apple.com/verifyReceipt"
    public var verifyReceiptSandboxURL = "https://sandbox.itunes.apple.com/verifyReceipt"
    /// How StoreKit 1 receipts are confirmed; nil when neither an API key nor a shared secret is set.
    public var receiptMode: ReceiptMode?
    /// Online revocation (OCSP) checks of App Store certificate chains.
    public var onlineChecks = false

    /// A variable with a bad value (the shared type: the service reports it as it is).
    public typealias Invalid = ConfigurationInvalid

    public static func fromEnvironment(_ environment: [String: String]) throws -> AppStoreConfiguration {
        let settings = EnvironmentSettings(environment)
        func value(_ name: String) -> String? { settings.value(name) }
        func url(_ name: String, default fallback: String) throws -> String { try settings.url(name, default: fallback) }

        let roots: [Certificate]
        do {
            roots = try AppleRootCertificates.configured(environment: environment)
        } catch {
            throw Invalid(variable: "RECEIPTGATE_APPLE_ROOT_CERTS", problem: "\(error)")
        }
        var configuration = AppStoreConfiguration(trustRoots: roots)
        do {
            configuration.receiptTrustRoots = try AppleRootCertificates.configuredReceiptRoots(environment: environment)
        } catch {
            throw Invalid(variable: "RECEIPTGATE_APPLE_RECEIPT_ROOT_CERTS", problem: "\(error)")
        }

        let keyVariables = ["RECEIPTGATE_APPSTORE_API_KEY_ID", "RECEIPTGATE_APPSTORE_API_ISSUER_ID", "RECEIPTGATE_APPSTORE_API_KEY_PATH"]
        let given = keyVariables.filter { value($0) != nil }
        if !given.isEmpty {
            guard given.count == keyVariables.count, let keyID = value(keyVariables[0]), let issuerID = value(keyVariables[1]),
                  let path = value(keyVariables[2])
            else {
                let missing = keyVariables.first { value($0) == nil } ?? keyVariables[0]
                throw Invalid(variable: missing, problem: "the App Store Server API needs \(keyVariables.joined(separator: ", ")) together")
            }
            do {
                let loaded = try AppStoreServerAPIClient.Configuration(keyID: keyID, issuerID: issuerID, bundleID: "", privateKeyPath: path)
                configuration.serverAPIKey = ServerAPIKey(keyID: keyID, issuerID: issuerID, privateKey: loaded.privateKey)
            } catch {
                throw Invalid(variable: "RECEIPTGATE_APPSTORE_API_KEY_PATH", problem: "\(error)")
            }
        }
        configuration.serverAPIProductionURL = try url("RECEIPTGATE_APPSTORE_API_PRODUCTION_URL", default: configuration.serverAPIProductionURL)
        configuration.serverAPISandboxURL = try url("RECEIPTGATE_APPSTORE_API_SANDBOX_URL", default: configuration.serverAPISandboxURL)
        configuration.sharedSecret = value("RECEIPTGATE_APPSTORE_SHARED_SECRET")
        configuration.verifyReceiptProductionURL = try url("RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_PRODUCTION_URL", default: configuration.verifyReceiptProductionURL)
        configuration.verifyReceiptSandboxURL = try url("RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_SANDBOX_URL", default: configuration.verifyReceiptSandboxURL)

        if let mode = value("RECEIPTGATE_APPSTORE_RECEIPT_MODE") {
            guard let parsed = ReceiptMode(rawValue: mode) else {
                throw Invalid(variable: "RECEIPTGATE_APPSTORE_RECEIPT_MODE", problem: "must be server_api or verify_receipt, got \"\(mode)\"")
            }
            if parsed == .serverAPI && configuration.serverAPIKey == nil {
                throw Invalid(variable: "RECEIPTGATE_APPSTORE_RECEIPT_MODE", problem: "server_api needs RECEIPTGATE_APPSTORE_API_KEY_ID, _ISSUER_ID and _KEY_PATH")
            }
            if parsed == .verifyReceipt && configuration.sharedSecret == nil {
                throw Invalid(variable: "RECEIPTGATE_APPSTORE_RECEIPT_MODE", problem: "verify_receipt needs RECEIPTGATE_APPSTORE_SHARED_SECRET")
            }
            configuration.receiptMode = parsed
        } else {
            configuration.receiptMode = configuration.serverAPIKey != nil ? .serverAPI : configuration.sharedSecret != nil ? .verifyReceipt : nil
        }

        switch value("RECEIPTGATE_APPLE_ONLINE_CHECKS")?.lowercased() {
        case nil, "off", "false", "0": configuration.onlineChecks = false
        case "on", "true", "1": configuration.onlineChecks = true
        case let other?: throw Invalid(variable: "RECEIPTGATE_APPLE_ONLINE_CHECKS", problem: "must be on or off, got \"\(other)\"")
        }
        return configuration
    }

    /// An App Store Server API client for one app (the JWT names the bundle), or nil without a key.
    public func serverAPIClient(bundleID: String, http: HTTPClient) -> AppStoreServerAPIClient? {
        guard let key = serverAPIKey else { return nil }
        var client = AppStoreServerAPIClient.Configuration(keyID: key.keyID, issuerID: key.issuerID, bundleID: bundleID, privateKey: key.privateKey)
        client.productionBaseURL = serverAPIProductionURL
        client.sandboxBaseURL = serverAPISandboxURL
        return AppStoreServerAPIClient(configuration: client, http: http)
    }
}
