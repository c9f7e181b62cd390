package import Foundation
import ReceiptCore

/// The Xsolla provider's settings, read once from the environment.
public struct XsollaConfiguration: Sendable {
    /// The merchant API's root (the transactions report lives under it).
    package var apiURL = "https://api.xsolla.com/merchant/v2"
    /// How often the transactions report is read for what webhooks missed; nil turns it off. The
    /// report is a reporting API, not a feed: once an hour keeps well inside its limits.
    package var reconcileInterval: Duration? = .seconds(3600)
    /// How far back a client's first reconciliation looks.
    package var firstLookback: TimeInterval = 7 * 86_400
    /// The longest window the report searches in one request (Xsolla's registry allows 92 days).
    package var maxWindow: TimeInterval = 92 * 86_400
    /// How far back each reconciliation looks for refunds: the report is searched by the date a
    /// transaction was made, not refunded, so a refund of an older sale is found only by reading
    /// the refunded transactions of this span again (the longest one search allows).
    package var refundLookback: TimeInterval = 92 * 86_400
    /// Transactions per report page.
    package var pageSize = 100

    package init() {}

    public static func fromEnvironment(_ environment: [String: String]) throws -> XsollaConfiguration {
        let settings = EnvironmentSettings(environment)
        var configuration = XsollaConfiguration()
        configuration.apiURL = try settings.url("RECEIPTGATE_XSOLLA_API_URL", default: configuration.apiURL)
        if let raw = settings.value("RECEIPTGATE_XSOLLA_RECONCILE_INTERVAL") {
            guard let seconds = Int(raw), seconds >= 0, seconds <= 7 * 86_400 else {
                throw ConfigurationInvalid(
                    variable: "RECEIPTGATE_XSOLLA_RECONCILE_INTERVAL",
                    problem: "must be a whole number of seconds up to a week (0 turns it off), got \"\(raw)\"")
            }
            configuration.reconcileInterval = seconds == 0 ? nil : .seconds(seconds)
        }
        return configuration
    }
}
