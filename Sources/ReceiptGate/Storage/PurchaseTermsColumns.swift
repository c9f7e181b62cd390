import Foundation
import Postgres
import ReceiptCore

/// A purchase's offer, items and commitment as the ledger's JSON columns hold them: the API's
/// own shape (`PurchaseTerms.swift` in ReceiptCore), so what is stored is what is shown.
enum PurchaseTermsColumns {
    /// The JSON text of `value`, or nil (SQL NULL) for nothing to say.
    static func text(_ value: (some Encodable)?) -> String? {
        guard let value else { return nil }
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }

    static func text(_ items: [PurchaseItem]) -> String? {
        items.isEmpty ? nil : text(Optional(items))
    }

    /// The column's value decoded, or nil when NULL.
    static func decode<Value: Decodable>(_ row: PostgresRow, _ column: String, as type: Value.Type) throws -> Value? {
        guard let text = try row.decode(column, as: String?.self) else { return nil }
        return try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    /// Reads the three columns into `record`.
    static func read(_ row: PostgresRow, into record: inout TransactionRecord) throws {
        record.offer = try decode(row, "offer", as: PurchaseOffer.self)
        record.items = try decode(row, "commerce_items", as: [PurchaseItem].self) ?? []
        record.commitment = try decode(row, "commitment", as: BillingCommitment.self)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
}
