package import Foundation
import ReceiptCore

/// The Stripe provider's settings, read once from the environment.
public struct StripeConfiguration: Sendable {
    /// The API version every request pins (`Stripe-Version`), so the objects read back keep the
    /// shape this provider reads whatever the account's default version is. Basil is the version
    /// that moved a subscription's period to its items and an invoice's subscription to its
    /// `parent`, and took `Invoice.payment_intent` and `Charge.invoice` away.
    package static let apiVersion = "2025-03-31.basil"

    /// Stripe's API root (tests, a proxy).
    package var apiURL = "https://api.stripe.com"
    /// How often each client's event list is read; nil turns reconciliation off.
    package var reconcileInterval: Duration? = .seconds(900)
    /// How far back the event list is read at most: Stripe keeps events 30 days, and a start older
    /// than it keeps is refused; a day less leaves room for clocks that differ.
    package var eventLookback: TimeInterval = 29 * 86_400
    /// Events per page of the list (Stripe's maximum).
    package var eventPageSize = 100
    /// How far a signature's timestamp may be from now, either way (Stripe's libraries' default).
    package var signatureTolerance: TimeInterval = 300

    package init() {}

    public static func fromEnvironment(_ environment: [String: String]) throws -> StripeConfiguration {
        let settings = EnvironmentSettings(environment)
        var configuration = StripeConfiguration()
        configuration.apiURL = try settings.url("RECEIPTGATE_STRIPE_API_URL", default: configuration.apiURL)
        while configuration.apiURL.hasSuffix("/") { configuration.apiURL.removeLast() }
        if let raw = settings.value("RECEIPTGATE_STRIPE_RECONCILE_INTERVAL") {
            guard let seconds = Int(raw), seconds >= 0 else {
                throw ConfigurationInvalid(
                    variable: "RECEIPTGATE_STRIPE_RECONCILE_INTERVAL",
                    problem: "must be a whole number of seconds (0 turns it off), got \"\(raw)\"")
            }
            configuration.reconcileInterval = seconds == 0 ? nil : .seconds(seconds)
        }
        return configuration
    }
}
