import Foundation
import ReceiptCore

/// One page of `cancelledList`: Huawei's cancelled or refunded purchases and the token of the page
/// after. Huawei documents `cancelledPurchaseList` as a JSON string holding the records; an array
/// (of objects, or of JSON strings) is read too, so a change of encoding does not stop the poll.
struct HuaweiCancelledPurchasePage: Sendable {
    var purchases: [HuaweiCancelledPurchase]
    var continuationToken: String?

    static func decode(_ body: Data) throws(StoreAPIError) -> HuaweiCancelledPurchasePage {
        guard let object = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] else {
            throw HuaweiAPIErrors.malformed("Huawei's cancelled list is not a JSON object")
        }
        var list: Any? = object["cancelledPurchaseList"]
        if let text = list as? String {
            list =
                text.trimmingCharacters(in: .whitespaces).isEmpty
                ? [] : try? JSONSerialization.jsonObject(with: Data(text.utf8))
        }
        let entries: [Any]
        switch list {
        case nil, is NSNull: entries = []
        case let array as [Any]: entries = array
        default:
            throw HuaweiAPIErrors.malformed(
                "Huawei's cancelledPurchaseList is neither a list nor a JSON string of one")
        }
        var purchases: [HuaweiCancelledPurchase] = []
        for entry in entries {
            let record = (entry as? String).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } ?? entry
            guard let fields = record as? [String: Any] else {
                throw HuaweiAPIErrors.malformed("a record of Huawei's cancelled list is not a JSON object")
            }
            purchases.append(HuaweiCancelledPurchase(fields))
        }
        let token = (object["continuationToken"] as? String).flatMap { $0.isEmpty ? nil : $0 }
        return HuaweiCancelledPurchasePage(purchases: purchases, continuationToken: token)
    }
}

/// A record of the cancelled list, every field optional: the typed view of the fields documented
/// today, and the whole record as Huawei sent it (less the purchase token) for support.
struct HuaweiCancelledPurchase: Sendable {
    var orderId: String?
    var productId: String?
    var purchaseToken: String?
    var purchaseTime: Int64?
    var cancelledTime: Int64?
    /// 0 user, 1 developer, 2 Huawei.
    var cancelledSource: Int?
    /// 0 other, 1 user regret, 2 product not provided, 3 app service abnormal, 4 accidental
    /// purchase, 5 fraud, 6 chargeback, 7 upgrade or downgrade, 8 service area changed.
    var cancelledReason: Int?
    /// Not documented for this list; read where Huawei adds it, since a subscription is read
    /// again only by its subscription id.
    var subscriptionId: String?
    /// The record as sent, keys sorted, without the purchase token (a bearer secret of a kind).
    var kept: Data

    init(_ fields: [String: Any]) {
        orderId = Self.text(fields["orderId"])
        productId = Self.text(fields["productId"])
        purchaseToken = Self.text(fields["purchaseToken"])
        purchaseTime = Self.number(fields["purchaseTime"])
        cancelledTime = Self.number(fields["cancelledTime"])
        cancelledSource = Self.number(fields["cancelledSource"]).map { Int(clamping: $0) }
        cancelledReason = Self.number(fields["cancelledReason"]).map { Int(clamping: $0) }
        subscriptionId = Self.text(fields["subscriptionId"])
        var rest = fields
        rest["purchaseToken"] = nil
        kept =
            (try? JSONSerialization.data(withJSONObject: rest, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
    }

    static let sources: [Int: String] = [0: "user", 1: "developer", 2: "huawei"]
    static let reasons: [Int: String] = [
        0: "other", 1: "user_regret", 2: "product_not_provided", 3: "app_service_abnormal", 4: "accidental_purchase",
        5: "fraud",
        6: "chargeback", 7: "upgrade_or_downgrade", 8: "service_area_changed",
    ]

    /// Huawei sends numbers; a number sent as text is read as well.
    private static func number(_ value: Any?) -> Int64? {
        if let text = value as? String { return Int64(text.trimmingCharacters(in: .whitespaces)) }
        return (value as? NSNumber)?.int64Value
    }

    private static func text(_ value: Any?) -> String? {
        if let text = value as? String { return text.isEmpty ? nil : text }
        if let number = value as? NSNumber { return number.stringValue }
        return nil
    }
}
