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
                throw ConfigurationInvalid(variable: "RECEIPTGATE_HUAWEI_CANCELLED_POLL_SECONDS",
                                           problem: "must be a whole number of seconds (0 turns it off), got \"\(raw)\"")
            }
            configuration.cancelledPurchasesInterval = seconds == 0 ? nil : .seconds(seconds)
        }
        if let raw = settings.value("RECEIPTGATE_HUAWEI_CANCELLED_POLL_SITES") {
            let names = raw.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
            let sites = names.compactMap(HuaweiSite.init(rawValue:))
            guard !sites.isEmpty, sites.count == names.count else {
                throw ConfigurationInvalid(variable: "RECEIPTGATE_HUAWEI_CANCELLED_POLL_SITES",
                                           problem: "must be a comma-separated list of " + HuaweiSite.allCases.map(\.rawValue).joined(separator: ", ")
                                            + ", got \"\(raw)\"")
            }
            configuration.cancelledPurchasesSites = sites
        }
        return configuration
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
        "AD", "AL", "AT", "BA", "BE", "BG", "BY", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FO", "FR", "GB", "GI", "GR", "HR",
        "HU", "IE", "IS", "IT", "LI", "LT", "LU", "LV", "MC", "MD", "ME", "MK", "MT", "NL", "NO", "PL", "PT", "RO", "RS", "SE", "SI",
        "SK", "SM", "UA", "VA", "XK",
    ]
}
