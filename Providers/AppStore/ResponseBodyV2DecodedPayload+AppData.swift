import Foundation

extension ResponseBodyV2DecodedPayload {
    /// The app a notification speaks for when it carries no purchase: `appData`, which replaces
    /// `data` in `RESCIND_CONSENT` (App Store Server Notifications 2.19.0; Apple's reference
    /// "appData", and `AppData` of app-store-server-library 3.x). Every field optional, unknown
    /// environments kept raw, as for `data`.
    public struct AppData: Codable, Hashable, Sendable {
        package var appAppleId: Int64?
        package var bundleId: String?
        public var environment: AppStoreEnvironment?
        /// The buyer's app transaction (JWSAppTransaction), proven like every signed datum
        /// before anything is read from it.
        package var signedAppTransactionInfo: String?

        package init() {}
    }
}
