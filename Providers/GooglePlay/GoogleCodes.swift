/// Google's numbered codes as raw-value types: a known value by its name, an unknown one kept as
/// Google sent it (decoded from the number, never refused).

/// `subscriptionNotification.notificationType` (Real-time developer notifications reference).
struct SubscriptionNotificationType: RawRepresentable, Codable, Hashable, Sendable {
    let rawValue: Int
    init(rawValue: Int) { self.rawValue = rawValue }

    static let recovered = Self(rawValue: 1)
    static let renewed = Self(rawValue: 2)
    static let canceled = Self(rawValue: 3)
    static let purchased = Self(rawValue: 4)
    static let onHold = Self(rawValue: 5)
    static let inGracePeriod = Self(rawValue: 6)
    static let restarted = Self(rawValue: 7)
    static let deferred = Self(rawValue: 9)
    static let paused = Self(rawValue: 10)
    static let revoked = Self(rawValue: 12)
    static let expired = Self(rawValue: 13)

    static let names: [Int: String] = [
        1: "SUBSCRIPTION_RECOVERED", 2: "SUBSCRIPTION_RENEWED", 3: "SUBSCRIPTION_CANCELED", 4: "SUBSCRIPTION_PURCHASED",
        5: "SUBSCRIPTION_ON_HOLD", 6: "SUBSCRIPTION_IN_GRACE_PERIOD", 7: "SUBSCRIPTION_RESTARTED",
        8: "SUBSCRIPTION_PRICE_CHANGE_CONFIRMED",
        9: "SUBSCRIPTION_DEFERRED", 10: "SUBSCRIPTION_PAUSED", 11: "SUBSCRIPTION_PAUSE_SCHEDULE_CHANGED",
        12: "SUBSCRIPTION_REVOKED",
        13: "SUBSCRIPTION_EXPIRED", 17: "SUBSCRIPTION_ITEMS_CHANGED", 18: "SUBSCRIPTION_CANCELLATION_SCHEDULED",
        19: "SUBSCRIPTION_PRICE_CHANGE_UPDATED", 20: "SUBSCRIPTION_PENDING_PURCHASE_CANCELED",
        22: "SUBSCRIPTION_PRICE_STEP_UP_CONSENT_UPDATED",
    ]
    /// Google's name, or the number under the notification's prefix.
    var name: String { Self.names[rawValue] ?? "SUBSCRIPTION_\(rawValue)" }
}

/// `oneTimeProductNotification.notificationType`.
struct OneTimeNotificationType: RawRepresentable, Codable, Hashable, Sendable {
    let rawValue: Int
    init(rawValue: Int) { self.rawValue = rawValue }

    static let purchased = Self(rawValue: 1)
    static let canceled = Self(rawValue: 2)

    var name: String {
        switch self {
        case .purchased: "ONE_TIME_PRODUCT_PURCHASED"
        case .canceled: "ONE_TIME_PRODUCT_CANCELED"
        default: "ONE_TIME_PRODUCT_\(rawValue)"
        }
    }
}

/// A void's `refundType`.
package struct RefundType: RawRepresentable, Codable, Hashable, Sendable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }

    package static let full = Self(rawValue: 1)
    package static let quantityBasedPartial = Self(rawValue: 2)
}

/// A void's `productType`.
struct VoidedProductType: RawRepresentable, Codable, Hashable, Sendable {
    let rawValue: Int
    init(rawValue: Int) { self.rawValue = rawValue }

    static let subscription = Self(rawValue: 1)
    static let oneTime = Self(rawValue: 2)
}
