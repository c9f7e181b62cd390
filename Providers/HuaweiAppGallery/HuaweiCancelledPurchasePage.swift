import Foundation
import JSON
import ReceiptCore

/// One page of `cancelledList`: Huawei's cancelled or refunded purchases and the token of the page
/// after. Huawei documents `cancelledPurchaseList` as a JSON string holding the records; an array
/// (of objects, or of JSON strings) is read too, so a change of encoding does not stop the poll.
struct HuaweiCancelledPurchasePage: Sendable {
    var purchases: [HuaweiCancelledPurchase]
    var continuationToken: String?

    static func decode(_ body: Data) throws(StoreAPIError) -> HuaweiCancelledPurchasePage {
        guard let object = (try? JSONDecoder().decode(JSONValue.self, from: body))?.object else {
            throw HuaweiAPIErrors.malformed("Huawei's cancelled list is not a JSON object")
        }
        var list = object["cancelledPurchaseList"]
        if let text = list?.string {
            list = text.trimmingCharacters(in: .whitespaces).isEmpty ? .array([]) : container(in: text)
        }
        let entries: [JSONValue]
        switch list {
        case nil, .null?: entries = []
        case .array(let array)?: entries = array
        default:
            throw HuaweiAPIErrors.malformed(
                "Huawei's cancelledPurchaseList is neither a list nor a JSON string of one")
        }
        var purchases: [HuaweiCancelledPurchase] = []
        for entry in entries {
            let record = entry.string.flatMap(container(in:)) ?? entry
            guard let fields = record.object else {
                throw HuaweiAPIErrors.malformed("a record of Huawei's cancelled list is not a JSON object")
            }
            purchases.append(HuaweiCancelledPurchase(fields))
        }
        let token = object["continuationToken"]?.string.flatMap { $0.isEmpty ? nil : $0 }
        return HuaweiCancelledPurchasePage(purchases: purchases, continuationToken: token)
    }

    /// The object or array a string holds as JSON; nil for anything else (a list that is not
    /// JSON reads as empty, and a record that is not an object is refused).
    private static func container(in text: String) -> JSONValue? {
        let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        return value?.object != nil || value?.array != nil ? value : nil
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

    init(_ fields: [String: JSONValue]) {
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
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        kept = (try? encoder.encode(rest)) ?? Data("{}".utf8)
    }

    static let sources: [Int: String] = [0: "user", 1: "developer", 2: "huawei"]
    static let reasons: [Int: String] = [
        0: "other", 1: "user_regret", 2: "product_not_provided", 3: "app_service_abnormal", 4: "accidental_purchase",
        5: "fraud",
        6: "chargeback", 7: "upgrade_or_downgrade", 8: "service_area_changed",
    ]

    /// Huawei sends numbers; a number sent as text is read as well.
    private static func number(_ value: JSONValue?) -> Int64? {
        if let text = value?.string { return Int64(text.trimmingCharacters(in: .whitespaces)) }
        return value?.truncatedInteger
    }

    private static func text(_ value: JSONValue?) -> String? {
        if let text = value?.string { return text.isEmpty ? nil : text }
        return value?.numberText
    }
}
