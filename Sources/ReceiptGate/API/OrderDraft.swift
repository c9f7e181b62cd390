import ReceiptCore

/// `POST /v1/orders`' body as read: an order whose currency, and whose lines' prices and
/// descriptions, may still be to fill in from the store (the buyer's currency) and the client's
/// catalog (`products price`) before the store is asked.
struct OrderDraft: Sendable {
    /// Its currency empty when the body left it out; a line's price 0 and description empty where
    /// the body left them out (`unpriced`, `undescribed`).
    var request: OrderRequest
    var unpriced: Set<Int> = []
    var undescribed: Set<Int> = []

    static func isCurrencyCode(_ text: String) -> Bool {
        text.utf8.count == 3 && text.unicodeScalars.allSatisfy { ("A"..."Z").contains($0) }
    }
}
