import Foundation
import JSON
import ReceiptCore

/// A webhook whose signature held: its type, its body, and the project it is for (the body's, or
/// the client's when a Web Shop webhook names none).
struct XsollaWebhook: Sendable {
    let type: String
    let body: [String: JSONValue]
    let raw: Data
    let project: String?

    func notification(store: StoreID, id: String, purchase: VerifiedPurchase, event: StoreEvent) -> StoreNotification {
        var notification = StoreNotification(
            store: store, notificationID: id, type: type, subtype: nil, environment: purchase.environment,
            appIdentifier: purchase.appIdentifier ?? project, transactionID: purchase.transactionID,
            originalTransactionID: purchase.originalTransactionID, productID: purchase.productID,
            signedAt: purchase.purchaseDate, decodedJSON: kept)
        notification.event = event
        // The stored raw body is the trimmed one too: no buyer's contact details reach it.
        notification.rawBody = kept
        return notification
    }

    /// The body as Xsolla sent it, kept for support, less what names the buyer beyond their id
    /// (e-mail, phone, IP address, name; a gift's receiver e-mail), here and under `billing`.
    var kept: Data {
        func trimmed(_ fields: [String: JSONValue]) -> [String: JSONValue] {
            var fields = fields
            if let user = fields["user"]?.object {
                fields["user"] = .object(user.filter { ["id", "external_id", "country"].contains($0.key) })
            }
            if var purchase = fields["purchase"]?.object, let gift = purchase["gift"]?.object {
                purchase["gift"] = .object(gift.filter { ["giver_id", "receiver_id"].contains($0.key) })
                fields["purchase"] = .object(purchase)
            }
            if let billing = fields["billing"]?.object { fields["billing"] = .object(trimmed(billing)) }
            return fields
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(JSONValue.object(trimmed(body)))) ?? Data("{}".utf8)
    }
}

/// The codes of Xsolla's webhook error body (`{"error": {"code", "message"}}`), as its webhook
/// documentation and its SDKs name them.
enum XsollaWebhookCode {
    static let invalidSignature = "INVALID_SIGNATURE"
    static let invalidUser = "INVALID_USER"
    static let invalidParameter = "INVALID_PARAMETER"
    static let serverError = "SERVER_ERROR"
}

/// Xsolla's refund codes (`refund_details.code`), as its refund webhook documents them.
enum XsollaRefundCode {
    static func reason(_ code: Int) -> String {
        switch code {
        case 1, 9, 10: "refund"
        case 2: "chargeback"
        case 3: "integration_error"
        case 4, 7, 11, 12: "fraud"
        case 5: "test_payment"
        case 6: "invoice_expired"
        case 8: "payment_system_request"
        case 13: "duplicate"
        default: "refund"
        }
    }
}
