import Foundation
import JSON
import ReceiptCore

/// An order as Steam's `QueryTxn` (v3) and `GetReport` (v5) describe it
/// (partner.steamgames.com/doc/webapi/ISteamMicroTxn#QueryTxn, #GetReport): every field optional,
/// statuses kept raw (Appendix A of the implementation guide lists them; Valve adds some).
struct SteamOrder: Sendable {
    struct Item: Sendable {
        var itemID: String?
        var quantity: Int?
        /// Total cost to the user minus VAT, in hundredths of the currency.
        var amount: Int64?
        var vat: Int64?
        var status: String?
    }

    var orderID: String?
    var transactionID: String?
    var steamID: String?
    var status: String?
    var currency: String?
    /// When the order last changed (`time`): the report's cursor.
    var time: String?
    var country: String?
    var items: [Item]
    /// The order as Steam sent it, kept for support.
    var raw: JSONValue

    init(_ value: JSONValue) {
        raw = value
        orderID = value["orderid"]?.steamText
        transactionID = value["transid"]?.steamText
        steamID = value["steamid"]?.steamText
        status = value["status"]?.string
        currency = value["currency"]?.string
        time = value["time"]?.string
        country = value["country"]?.string
        items = (value["items"]?.array ?? []).map { item in
            Item(
                itemID: item["itemid"]?.steamText, quantity: item["qty"]?.steamText.flatMap { Int($0) },
                amount: item["amount"]?.steamText.flatMap { Int64($0) },
                vat: item["vat"]?.steamText.flatMap { Int64($0) },
                status: item["itemstatus"]?.string)
        }
    }

    /// Appendix A's statuses.
    enum Status {
        static let initialized = "Init", approved = "Approved", succeeded = "Succeeded", failed = "Failed"
        static let refunded = "Refunded", partialRefund = "PartialRefund", chargedback = "Chargedback"
        static let suspectedFraud = "RefundedSuspectedFraud", friendlyFraud = "RefundedFriendlyFraud"
        /// The statuses after which the product should be revoked.
        static let reversed: Set<String> = [refunded, chargedback, suspectedFraud, friendlyFraud]
    }

    var date: Date? { time.flatMap(Self.date) }

    /// RFC 3339 UTC as Steam writes it (`2010-01-01T00:00:00Z`).
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    static func text(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
