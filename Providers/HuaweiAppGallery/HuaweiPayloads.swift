import Foundation

// Huawei's answers, every field optional: Huawei adds fields and values, and a missing one is an
// answer we work with, not a decoding failure. Codes stay raw numbers with typed views beside.

/// `InAppPurchaseData`: the purchase as Huawei signed it (the server API's data model).
package struct InAppPurchaseData: Codable, Sendable {
    package var applicationId: Int64?
    package var autoRenewing: Bool?
    /// This receipt's order: a new one for every purchase and every subscription fee deduction.
    package var orderId: String?
    /// 0 consumable, 1 non-consumable, 2 subscription.
    package var kind: Int?
    package var packageName: String?
    package var productId: String?
    package var productName: String?
    package var purchaseTime: Int64?
    /// -1 initialized, 0 purchased, 1 canceled, 2 refunded, 3 pending.
    package var purchaseState: Int?
    package var developerPayload: String?
    /// 0 not consumed, 1 consumed (one-time products).
    package var consumptionState: Int?
    /// 0 not confirmed, 1 confirmed.
    package var confirmed: Int?
    package var purchaseToken: String?
    /// 0 sandbox, 1 promotion; absent for a real purchase.
    package var purchaseType: Int?
    package var currency: String?
    /// The price times 100.
    package var price: Int64?
    package var country: String?
    package var payOrderId: String?
    package var payType: String?
    /// 0 HUAWEI ID, 1 AppTouch account.
    package var accountFlag: Int?
    // Subscriptions only.
    /// The order of the previous renewal's fee deduction.
    package var lastOrderId: String?
    package var productGroup: String?
    package var oriPurchaseTime: Int64?
    /// The subscription: the same for its whole life, across renewals (as is the purchase token).
    package var subscriptionId: String?
    /// The subscription this one was switched from (an upgrade or downgrade in the group).
    package var oriSubscriptionId: String?
    package var quantity: Int?
    package var numOfPeriods: Int?
    package var expirationDate: Int64?
    package var expirationIntent: Int?
    package var retryFlag: Int?
    package var trialFlag: Int?
    package var cancelTime: Int64?
    package var cancelReason: Int?
    package var renewStatus: Int?
    package var subIsvalid: Bool?
    package var cancelWay: Int?
    package var cancellationTime: Int64?
    package var graceExpirationTime: Int64?

    enum Kind: Equatable { case consumable, nonConsumable, subscription, other(Int?) }
    var typedKind: Kind {
        switch kind {
        case 0?: .consumable
        case 1?: .nonConsumable
        case 2?: .subscription
        default: .other(kind)
        }
    }

    enum State: Equatable { case purchased, canceled, refunded, other(Int?) }
    var state: State {
        switch purchaseState {
        case 0?: .purchased
        case 1?: .canceled
        case 2?: .refunded
        default: .other(purchaseState)
        }
    }
}

/// `POST /applications/purchases/tokens/verify`.
struct OrderVerifyResponse: Decodable, Sendable {
    var responseCode: ResponseCode?
    var responseMessage: String?
    var purchaseTokenData: String?
    var dataSignature: String?
    var signatureAlgorithm: String?
}

/// `POST /sub/applications/v2/purchases/get`.
struct SubscriptionGetResponse: Decodable, Sendable {
    var responseCode: ResponseCode?
    var responseMessage: String?
    var inappPurchaseData: String?
    var dataSignature: String?
    var signatureAlgorithm: String?
}

/// Any answer's envelope (`confirm`, errors).
struct ResponseEnvelope: Decodable, Sendable {
    var responseCode: ResponseCode?
    var responseMessage: String?
}

/// `responseCode`: documented as a string ("0"), kept as text whether it comes as one or as a number.
struct ResponseCode: RawRepresentable, Decodable, Sendable, Hashable {
    let rawValue: String

    init(rawValue: String) { self.rawValue = rawValue }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            rawValue = text.trimmingCharacters(in: .whitespaces)
        } else {
            rawValue = String(try container.decode(Int64.self))
        }
    }
}

/// Huawei's times: epoch milliseconds.
enum HuaweiTime {
    static func millis(_ value: Int64?) -> Date? { value.map { Date(timeIntervalSince1970: Double($0) / 1000) } }
}
