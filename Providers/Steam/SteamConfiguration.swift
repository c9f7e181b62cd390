package import Foundation
import ReceiptCore

/// The Steam provider's settings, read once from the environment.
public struct SteamConfiguration: Sendable {
    /// The partner Web API host: the publisher-key methods (`ISteamMicroTxn`, `ISteamUserAuth`)
    /// are served only there (partner.steamgames.com/doc/webapi_overview).
    package var apiURL = "https://partner.steam-api.com"
    /// How often each app's transaction report is read (`GetReport`). Valve asks partners to read
    /// it at least daily and allows it as often as every minute (implementation guide, step 6).
    package var reportInterval: Duration? = .seconds(900)
    /// Orders per report page (`maxresults`): Valve's default, within its advice of 1,000 to 10,000.
    package var reportPageSize = 1000
    /// How far back an app's first report read starts.
    package var firstLookback: TimeInterval = 30 * 86_400

    package init() {}

    public static func fromEnvironment(_ environment: [String: String]) throws -> SteamConfiguration {
        let settings = EnvironmentSettings(environment)
        var configuration = SteamConfiguration()
        configuration.apiURL = try settings.url("RECEIPTGATE_STEAM_API_URL", default: configuration.apiURL)
        while configuration.apiURL.hasSuffix("/") { configuration.apiURL.removeLast() }
        if let raw = settings.value("RECEIPTGATE_STEAM_REPORT_INTERVAL") {
            guard let seconds = Int(raw), seconds >= 0, seconds <= 86_400 else {
                throw ConfigurationInvalid(
                    variable: "RECEIPTGATE_STEAM_REPORT_INTERVAL",
                    problem: "must be a whole number of seconds up to a day (0 turns it off), got \"\(raw)\"")
            }
            configuration.reportInterval = seconds == 0 ? nil : .seconds(seconds)
        }
        return configuration
    }
}
