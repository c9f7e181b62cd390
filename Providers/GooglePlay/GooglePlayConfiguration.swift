package import Foundation
public import ReceiptCore

/// The Google Play provider's settings, read once from the environment (docs/configuration.md).
public struct GooglePlayConfiguration: Sendable {
    /// The service-wide key; a client's own (`google_play.service_account_key`) wins.
    package var serviceAccountKey: ServiceAccountKey?
    package var apiURL = "https://androidpublisher.googleapis.com"
    /// Real-time developer notifications: Google's OIDC push token, checked against this JWKS...
    package var jwksURL = "https://www.googleapis.com/oauth2/v3/certs"
    package var pushAudience: String?
    package var pushServiceAccount: String?
    /// ...or, where configured instead, a shared `?token=` in the push endpoint's URL.
    package var pushToken: String?
    /// How often voided purchases are polled; nil turns the poll off.
    package var voidedPurchasesInterval: Duration? = .seconds(3600)
    /// How far back the first poll of a package looks (Google keeps 30 days).
    package var voidedPurchasesLookback: TimeInterval = 30 * 86_400

    package init() {}

    /// A variable with a bad value (the shared type: the service reports it as it is).
    public typealias Invalid = ConfigurationInvalid

    public static func fromEnvironment(_ environment: [String: String]) throws -> GooglePlayConfiguration {
        let settings = EnvironmentSettings(environment)
        func value(_ name: String) -> String? { settings.value(name) }
        func url(_ name: String, default fallback: String) throws -> String {
            try settings.url(name, default: fallback)
        }
        var configuration = GooglePlayConfiguration()
        if let path = value("RECEIPTGATE_GOOGLE_SERVICE_ACCOUNT_KEY_PATH") {
            do { configuration.serviceAccountKey = try ServiceAccountKey(contentsOfFile: path) } catch {
                throw Invalid(variable: "RECEIPTGATE_GOOGLE_SERVICE_ACCOUNT_KEY_PATH", problem: "\(error)")
            }
        }
        configuration.apiURL = try url("RECEIPTGATE_GOOGLE_API_URL", default: configuration.apiURL)
        configuration.jwksURL = try url("RECEIPTGATE_GOOGLE_JWKS_URL", default: configuration.jwksURL)
        configuration.pushAudience = value("RECEIPTGATE_GOOGLE_PUSH_AUDIENCE")
        configuration.pushServiceAccount = value("RECEIPTGATE_GOOGLE_PUSH_SERVICE_ACCOUNT")
        configuration.pushToken = value("RECEIPTGATE_GOOGLE_PUSH_TOKEN")
        if let token = configuration.pushToken, token.count < 16 {
            throw Invalid(variable: "RECEIPTGATE_GOOGLE_PUSH_TOKEN", problem: "must be at least 16 characters")
        }
        if (configuration.pushAudience == nil) != (configuration.pushServiceAccount == nil) {
            throw Invalid(
                variable: configuration.pushAudience == nil
                    ? "RECEIPTGATE_GOOGLE_PUSH_AUDIENCE" : "RECEIPTGATE_GOOGLE_PUSH_SERVICE_ACCOUNT",
                problem:
                    "authenticated push needs RECEIPTGATE_GOOGLE_PUSH_AUDIENCE and RECEIPTGATE_GOOGLE_PUSH_SERVICE_ACCOUNT together"
            )
        }
        if let raw = value("RECEIPTGATE_GOOGLE_VOIDED_POLL_SECONDS") {
            guard let seconds = Int(raw), seconds >= 0 else {
                throw Invalid(
                    variable: "RECEIPTGATE_GOOGLE_VOIDED_POLL_SECONDS",
                    problem: "must be a whole number of seconds (0 turns it off), got \"\(raw)\"")
            }
            configuration.voidedPurchasesInterval = seconds == 0 ? nil : .seconds(seconds)
        }
        return configuration
    }
}
