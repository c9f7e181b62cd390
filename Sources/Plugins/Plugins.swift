import AccountLink
import AlogameGateway
import AmazonAppstore
import AppStore
import GooglePlay
import HiveAxyl
import HuaweiAppGallery
package import ReceiptCore
import Steam
import Stripe
import Xsolla

/// The plugins this binary serves: the one place a store or a dialect is named. Registering one
/// is a line here and its target in Package.swift (Providers/README.md). The executable and the
/// tests read this same list.
package enum Plugins {
    package static let all = registry(
        stores: [
            AppStoreProvider.plugin, GooglePlayProvider.plugin, AmazonAppstoreProvider.plugin,
            HuaweiAppGalleryProvider.plugin, StripeProvider.plugin, XsollaProvider.plugin,
            SteamProvider.plugin,
        ],
        dialects: [AlogameGateway.plugin, HiveAxyl.plugin, AccountLink.plugin])

    /// The list, or a stop at first use naming the clash: two stores with one vendor code or id
    /// would leave a dialect guessing which is meant, on every request, in every process.
    static func registry(stores: [StorePlugin], dialects: [DialectPlugin]) -> PluginList {
        do { return try PluginList(stores: stores, dialects: dialects) } catch { fatalError("\(error)") }
    }
}
