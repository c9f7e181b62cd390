import ReceiptCore

/// How SQL reads the items of a purchase (the `commerce_items` column, `PurchaseItem`'s JSON shape).
enum PurchaseItemSQL {
    /// The item (a jsonb object) still grants: the store has neither taken it back nor refunded it
    /// (`PurchaseItem.isRefunded`).
    static func stands(_ item: String) -> String {
        "(\(item) -> 'revocation_date_ms' IS NULL OR \(item) -> 'revocation_date_ms' = 'null'::jsonb)"
            + " AND jsonb_array_length(COALESCE(\(item) -> 'refunds', '[]'::jsonb)) = 0"
    }
}
