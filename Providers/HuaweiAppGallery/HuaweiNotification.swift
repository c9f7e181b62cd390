import Foundation

/// Huawei IAP's server notifications, version 2: an `ORDER` event (unsigned: a hint to read the
/// order again) or a `SUBSCRIPTION` event whose `statusUpdateNotification` JSON string is signed
/// with the app's IAP key. Every field optional.
struct HuaweiNotification: Decodable, Sendable {
    struct Order: Decodable, Sendable {
        var version: String?
        /// 1 paid, 2 refunded.
        var notificationType: Int?
        var purchaseToken: String?
        var productId: String?
    }

    struct Subscription: Decodable, Sendable {
        var version: String?
        var statusUpdateNotification: String?
        var notificationSignature: String?
        var signatureAlgorithm: String?
    }

    var version: String?
    var eventType: String?
    var notifyTime: Int64?
    var applicationId: ApplicationID?
    var orderNotification: Order?
    var subNotification: Subscription?

    /// The app id, sent as a string and by some senders as a number.
    struct ApplicationID: Decodable, Sendable {
        let raw: String
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) {
                raw = text
            } else {
                raw = String(try container.decode(Int64.self))
            }
        }
    }
}

/// `statusUpdateNotification`, once its signature matched.
struct StatusUpdateNotification: Codable, Sendable {
    /// `PROD` or `Sandbox`.
    var environment: String?
    var notificationType: Int?
    var subscriptionId: String?
    var purchaseToken: String?
    var orderId: String?
    var productId: String?
    var autoRenewStatus: Int?
    var cancellationDate: Int64?
    var expirationIntent: Int?

    static let types: [Int: String] = [
        0: "INITIAL_BUY", 1: "CANCEL", 2: "RENEWAL", 3: "INTERACTIVE_RENEWAL", 4: "NEW_RENEWAL_PREF",
        5: "RENEWAL_STOPPED",
        6: "RENEWAL_RESTORED", 7: "RENEWAL_RECURRING", 8: "IN_GRACE_PERIOD", 9: "ON_HOLD", 10: "PAUSED",
        11: "PAUSE_PLAN_CHANGED",
        12: "PRICE_CHANGE_CONFIRMED", 13: "DEFERRED",
    ]
}
