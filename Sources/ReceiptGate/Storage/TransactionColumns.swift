import Foundation
import JSON
import Postgres
import ReceiptCore

/// What a new transaction row is written from, whichever statement writes it.
struct NewTransactionRow {
    let purchase: VerifiedPurchase
    let state: TransactionState
    let clientID: String
    let gameID: Int64?
    /// The claim that writes the row, with the caller's own identifiers; nil for a row a store
    /// tells us of (known, not claimed).
    var claimant: Claimant? = nil
}

/// The columns a new transaction row is written with: one list that the single insert, the
/// notification upsert and the group-commit batch (its JSON input, record type and insert) are
/// all built from, so a column added here reaches every path that records a purchase.
enum TransactionColumns {
    struct Column: Sendable {
        let name: String
        /// The column's type, for the batch's `jsonb_to_recordset` record definition.
        let type: String
        /// The value in PostgreSQL's text input format; nil is NULL.
        let value: @Sendable (NewTransactionRow) -> String?
    }

    static let all: [Column] = [
        Column(name: "store", type: "text") { $0.purchase.store.rawValue },
        Column(name: "environment", type: "text") { $0.purchase.environment.rawValue },
        Column(name: "transaction_id", type: "text") { $0.purchase.transactionID },
        Column(name: "original_transaction_id", type: "text") { $0.purchase.originalTransactionID },
        Column(name: "order_id", type: "text") { $0.purchase.orderID },
        Column(name: "product_id", type: "text") { $0.purchase.productID },
        Column(name: "product_kind", type: "text") { $0.purchase.kind?.rawValue },
        Column(name: "purchase_option_id", type: "text") { $0.purchase.purchaseOptionID },
        Column(name: "quantity", type: "integer") { $0.purchase.quantity?.postgresText },
        Column(name: "price_milliunits", type: "bigint") { $0.purchase.priceMilliunits?.postgresText },
        Column(name: "currency", type: "text") { $0.purchase.currency },
        Column(name: "paid_milliunits", type: "bigint") { $0.purchase.paidMilliunits?.postgresText },
        Column(name: "tax_milliunits", type: "bigint") { $0.purchase.taxMilliunits?.postgresText },
        Column(name: "storefront", type: "text") { $0.purchase.storefront },
        Column(name: "app_identifier", type: "text") { $0.purchase.appIdentifier },
        Column(name: "purchase_date", type: "timestamptz") { $0.purchase.purchaseDate?.postgresText },
        Column(name: "expires_date", type: "timestamptz") { $0.purchase.expiresDate?.postgresText },
        Column(name: "revocation_date", type: "timestamptz") { $0.purchase.revocationDate?.postgresText },
        Column(name: "revocation_reason", type: "text") { $0.purchase.revocationReason },
        Column(name: "ownership", type: "text") { $0.purchase.ownership?.rawValue },
        Column(name: "account_token", type: "text") { $0.purchase.accountToken },
        Column(name: "app_transaction_id", type: "text") { $0.purchase.appTransactionID },
        Column(name: "external_purchase_token", type: "text") { $0.purchase.externalPurchaseToken },
        Column(name: "offer", type: "jsonb") { PurchaseTermsColumns.text($0.purchase.offer) },
        Column(name: "commerce_items", type: "jsonb") { PurchaseTermsColumns.text($0.purchase.items) },
        Column(name: "commitment", type: "jsonb") { PurchaseTermsColumns.text($0.purchase.commitment) },
        Column(name: "state", type: "text") { $0.state.rawValue },
        Column(name: "client_id", type: "text") { $0.clientID },
        Column(name: "game_id", type: "bigint") { $0.gameID?.postgresText },
        Column(name: "refund_store_type", type: "text") { $0.purchase.refund?.storeType },
        Column(name: "refund_partial", type: "boolean") { $0.purchase.refund?.storeSaysPartial?.postgresText },
        Column(name: "refund_percentage_milliunits", type: "integer") {
            $0.purchase.refund?.percentageMilliunits?.postgresText
        },
        Column(name: "refunded_quantity", type: "integer") { $0.purchase.refund?.quantity?.postgresText },
        // PostgreSQL reads the text `now` as its transaction's time: a claim is dated by the
        // database's clock, as every other row's time is, in each statement built from this list.
        Column(name: "claimed_at", type: "timestamptz") { $0.claimant == nil ? nil : "now" },
        Column(name: "player_id", type: "text") { $0.claimant?.playerID },
        Column(name: "character_id", type: "text") { $0.claimant?.characterID },
        Column(name: "server_id", type: "text") { $0.claimant?.serverID },
        Column(name: "game_version", type: "text") { $0.claimant?.gameVersion },
    ]

    /// `store, environment, ...`: the insert's column list (and the batch's select list).
    static let names = all.map(\.name).joined(separator: ", ")

    /// `store text, environment text, ...`: the batch's record definition. A JSON column comes in
    /// as its text (`jsonb_to_recordset` would keep a JSON string a string) and is cast in `selectList`.
    static let recordDefinition = all.map { "\($0.name) \($0.type == "jsonb" ? "text" : $0.type)" }.joined(
        separator: ", ")

    /// `store, environment, ..., offer::jsonb, ...`: the batch's select list from its records.
    static let selectList = all.map { $0.type == "jsonb" ? "\($0.name)::jsonb" : $0.name }.joined(separator: ", ")

    /// The row's values as bound parameters, in the order of `names`.
    static func values(_ row: NewTransactionRow) -> PostgresQuery {
        var values = PostgresQuery.StringInterpolation(literalCapacity: all.count * 2, interpolationCount: all.count)
        for (index, column) in all.enumerated() {
            if index > 0 { values.appendLiteral(", ") }
            values.appendInterpolation(column.value(row))
        }
        return PostgresQuery(stringInterpolation: values)
    }

    /// The row's values as members of the JSON object the batch reads with `jsonb_to_recordset`
    /// (which takes every type from its text form). A column with no value is left out: the
    /// record reads a missing member as NULL, and most of a purchase's columns have none.
    static func write(_ row: NewTransactionRow, into json: inout JSONWriter) {
        for column in all {
            guard let value = column.value(row) else { continue }
            json.key(column.name)
            json.string(value)
        }
    }
}
