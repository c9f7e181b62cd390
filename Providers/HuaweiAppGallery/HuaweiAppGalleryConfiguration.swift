package import Foundation
import ReceiptCore

/// The Huawei AppGallery provider's settings, read once from the environment.
public struct HuaweiAppGalleryConfiguration: Sendable {
    /// Huawei's OAuth 2.0 token endpoint (client credentials grant, app-level access tokens).
    package var oauthURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    /// One base for every site, order and subscription services alike (tests, a proxy). Unset,
    /// each purchase goes to the site Huawei documents for it (`HuaweiSite`).
    package var orderURL: String?
    /// How long before its expiry an access token is replaced.
    package var tokenRefreshMargin: TimeInterval = 300
    /// How often the cancelled or refunded purchases list is polled; nil turns the poll off.
    package var cancelledPurchasesInterval: Duration? = .seconds(3600)
    /// How far back the first poll of an app looks (Huawei's own default window is one month).
    package var cancelledPurchasesLookback: TimeInterval = 30 * 86_400
    /// The order sites whose cancelled list is read. A HUAWEI ID purchase is known at every HUAWEI
    /// ID site (they route between themselves), so one of them is enough; an AppTouch purchase is
    /// known only to the AppTouch site, which an operator adds where the app sells through carriers.
    package var cancelledPurchasesSites: [HuaweiSite] = [.china]
    /// How notifications may make us read Huawei (an order notification is unsigned: anyone can
    /// send one naming any token).
    package var notificationReads = NotificationReads()
    /// How long Huawei's OAuth endpoint refusing an app's id and secret is remembered: requests
    /// meanwhile are refused from memory instead of each asking again.
    package var oauthFailureLifetime: TimeInterval = 30

    /// The bounds on re-reads of Huawei that notifications ask for. Unsigned order notifications
    /// and signed subscription events each have their own: made-up order notifications never
    /// spend what a signed one needs. The defaults sit above what a busy game's genuine
    /// notifications need (Huawei sends one or two per purchase); a game that sells more than
    /// about a hundred a minute raises `perAppPerMinute`.
    public struct NotificationReads: Sendable {
        /// Re-reads one app's notifications may have running at once, each lane apart; a
        /// notification that would start another is answered 503 at once (Huawei sends it again).
        package var atOnce = 4
        /// Re-reads one app's order notifications may start a minute (a bucket of this many,
        /// refilled evenly); past it, 503. Anyone may send an order notification, and one caller
        /// address may post 600 a minute: this stays well below, so made-up tokens spend little of
        /// the app's Huawei quota.
        package var perAppPerMinute = 120
        /// The same for one app's signed subscription events, a bucket of their own.
        package var signedPerAppPerMinute = 600
        /// Transfers under way at once in each lane's HTTP client, shared by the lane's apps. A
        /// re-read that finds none free waits for one within `timeout`.
        package var threads = 8
        /// One attempt, no retries, at most this long.
        package var timeout: Duration = .seconds(5)
        /// How long the outcome of a re-read that settles its notification is remembered (Huawei's
        /// answer backs it, or shows nothing to record): the same notification sent again
        /// meanwhile is answered from memory, without asking Huawei.
        package var outcomeLifetime: Duration = .seconds(600)
        /// How long a re-read that failed for now (Huawei unreachable) is answered from memory. An
        /// answer that does not back its notification (a refund Huawei does not show yet) is never
        /// reused: the next notification claiming it is read again.
        package var unsettledLifetime: Duration = .seconds(30)
        /// Outcomes remembered at most; past it the ones nearest their end are forgotten first.
        package var maxRemembered = 10_000

        package init() {}
    }

    package init() {}

    public static func fromEnvironment(_ environment: [String: String]) throws -> HuaweiAppGalleryConfiguration {
        let settings = EnvironmentSettings(environment)
        var configuration = HuaweiAppGalleryConfiguration()
        configuration.oauthURL = try settings.url("RECEIPTGATE_HUAWEI_OAUTH_URL", default: configuration.oauthURL)
        if settings.value("RECEIPTGATE_HUAWEI_ORDER_URL") != nil {
            configuration.orderURL = try settings.url("RECEIPTGATE_HUAWEI_ORDER_URL", default: "")
        }
        if let raw = settings.value("RECEIPTGATE_HUAWEI_CANCELLED_POLL_SECONDS") {
            guard let seconds = Int(raw), seconds >= 0 else {
                throw ConfigurationInvalid(
                    variable: "RECEIPTGATE_HUAWEI_CANCELLED_POLL_SECONDS",
                    problem: "must be a whole number of seconds (0 turns it off), got \"\(raw)\"")
            }
            configuration.cancelledPurchasesInterval = seconds == 0 ? nil : .seconds(seconds)
        }
        if let raw = settings.value("RECEIPTGATE_HUAWEI_CANCELLED_POLL_SITES") {
            let names = raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter {
                !$0.isEmpty
            }
            let sites = names.compactMap(HuaweiSite.init(rawValue:))
            guard !sites.isEmpty, sites.count == names.count else {
                throw ConfigurationInvalid(
                    variable: "RECEIPTGATE_HUAWEI_CANCELLED_POLL_SITES",
                    problem: "must be a comma-separated list of "
                        + HuaweiSite.allCases.map(\.rawValue).joined(separator: ", ")
                        + ", got \"\(raw)\"")
            }
            configuration.cancelledPurchasesSites = sites
        }
        var reads = configuration.notificationReads
        reads.atOnce = try whole(settings, "RECEIPTGATE_HUAWEI_NOTIFICATION_READS_AT_ONCE", 1...256) ?? reads.atOnce
        reads.perAppPerMinute =
            try whole(settings, "RECEIPTGATE_HUAWEI_NOTIFICATION_READS_PER_MINUTE", 1...1_000_000)
            ?? reads.perAppPerMinute
        reads.signedPerAppPerMinute =
            try whole(settings, "RECEIPTGATE_HUAWEI_SIGNED_NOTIFICATION_READS_PER_MINUTE", 1...1_000_000)
            ?? reads.signedPerAppPerMinute
        reads.threads = try whole(settings, "RECEIPTGATE_HUAWEI_NOTIFICATION_READ_THREADS", 1...256) ?? reads.threads
        reads.timeout =
            try whole(settings, "RECEIPTGATE_HUAWEI_NOTIFICATION_READ_TIMEOUT_SECONDS", 1...60).map { .seconds($0) }
            ?? reads.timeout
        reads.outcomeLifetime =
            try whole(settings, "RECEIPTGATE_HUAWEI_NOTIFICATION_MEMORY_SECONDS", 1...86_400).map { .seconds($0) }
            ?? reads.outcomeLifetime
        reads.unsettledLifetime =
            try whole(settings, "RECEIPTGATE_HUAWEI_NOTIFICATION_UNSETTLED_MEMORY_SECONDS", 1...3600).map {
                .seconds($0)
            }
            ?? reads.unsettledLifetime
        reads.maxRemembered =
            try whole(settings, "RECEIPTGATE_HUAWEI_NOTIFICATION_MEMORY_ENTRIES", 100...10_000_000)
            ?? reads.maxRemembered
        configuration.notificationReads = reads
        configuration.oauthFailureLifetime =
            try whole(settings, "RECEIPTGATE_HUAWEI_OAUTH_FAILURE_SECONDS", 1...3600).map(TimeInterval.init)
            ?? configuration.oauthFailureLifetime
        return configuration
    }

    /// A whole number within `range`, or nil when unset; throws `ConfigurationInvalid` naming the variable.
    private static func whole(_ settings: EnvironmentSettings, _ name: String, _ range: ClosedRange<Int>) throws -> Int?
    {
        guard let raw = settings.value(name) else { return nil }
        guard let value = Int(raw), range.contains(value) else {
            throw ConfigurationInvalid(
                variable: name,
                problem: "must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(raw)\"")
        }
        return value
    }

    /// The service roots a purchase is read from.
    func roots(for site: HuaweiSite) -> (orders: String, subscriptions: String) {
        if let orderURL { return (orderURL, orderURL) }
        return (site.orderRoot, site.subscriptionRoot)
    }
}

/// Huawei's IAP sites (the common statement of the server API, and the 2022 move to the
/// `cloud.huawei.*` hosts). An AppTouch account's purchase (`accountFlag` 1) is known only to the
/// AppTouch site; any other purchase may be read at any of the four HUAWEI ID sites, which route
/// between themselves, so the one nearest the buyer's country is asked, China when it is unknown.
package enum HuaweiSite: String, Sendable, CaseIterable {
    case china, germany, singapore, russia, appTouch = "apptouch"

    var orderRoot: String {
        switch self {
        case .china: "https://orders-drcn.iap.cloud.huawei.com.cn"
        case .germany: "https://orders-dre.iap.cloud.huawei.eu"
        case .singapore: "https://orders-dra.iap.cloud.huawei.asia"
        case .russia: "https://orders-drru.iap.cloud.huawei.ru"
        case .appTouch: "https://orders-at-dre.iap.cloud.huawei.eu"
        }
    }

    var subscriptionRoot: String {
        switch self {
        case .china: "https://subscr-drcn.iap.cloud.huawei.com.cn"
        case .germany: "https://subscr-dre.iap.cloud.huawei.eu"
        case .singapore: "https://subscr-dra.iap.cloud.huawei.asia"
        case .russia: "https://subscr-drru.iap.cloud.huawei.ru"
        case .appTouch: "https://subscr-at-dre.iap.cloud.huawei.eu"
        }
    }

    /// `accountFlag` 1 is AppTouch; otherwise by ISO 3166 country: CN China, RU Russia, Europe
    /// Germany, any other known country Singapore, none China.
    package static func forPurchase(accountFlag: Int?, country: String?) -> HuaweiSite {
        if accountFlag == 1 { return .appTouch }
        guard let country = country?.uppercased(), country.count == 2 else { return .china }
        if country == "CN" { return .china }
        if country == "RU" { return .russia }
        return europe.contains(country) ? .germany : .singapore
    }

    static let europe: Set<String> = [
        "AD", "AL", "AT", "BA", "BE", "BG", "BY", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FO", "FR", "GB",
        "GI", "GR", "HR",
        "HU", "IE", "IS", "IT", "LI", "LT", "LU", "LV", "MC", "MD", "ME", "MK", "MT", "NL", "NO", "PL", "PT", "RO",
        "RS", "SE", "SI",
        "SK", "SM", "UA", "VA", "XK",
    ]
}
