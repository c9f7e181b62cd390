import Foundation
import Postgres
import ReceiptCore

/// One entitlement a player owns, and the purchase granting it, as `player_entitlements` holds it.
struct EntitlementGrant: Sendable, Equatable {
    var playerID: String
    var entitlement: String
    var store: StoreID
    var environment: StoreEnvironment
    var productID: String
    var transactionRowID: Int64
    var transactionID: String
    var originalTransactionID: String?
    var purchaseDate: Date?
    var expiresDate: Date?
    var gracePeriodExpiresDate: Date?
    /// Nil while the store has not said whether the subscription renews.
    var willRenew: Bool?
    var ownership: Ownership?
}

/// The columns of `player_entitlements` and their decoding, in one place.
enum EntitlementRows {
    /// What the index statement writes (after `client_id`).
    static let written = """
        player_id, entitlement, store, environment, product_id, transaction_row_id, transaction_id, original_transaction_id,
        purchase_date, expires_date, grace_period_expires_date, will_renew, ownership
        """

    static func columns(of alias: String) -> String {
        written.split(separator: ",").map { "\(alias).\($0.trimmingCharacters(in: .whitespacesAndNewlines))" }.joined(
            separator: ", ")
    }

    static func grant(_ row: PostgresRow) throws -> EntitlementGrant {
        EntitlementGrant(
            playerID: try row.decode("player_id"), entitlement: try row.decode("entitlement"),
            store: StoreID(rawValue: try row.decode("store")),
            environment: try TransactionRows.typed(row, "environment", as: StoreEnvironment.self),
            productID: try row.decode("product_id"), transactionRowID: try row.decode("transaction_row_id"),
            transactionID: try row.decode("transaction_id"),
            originalTransactionID: try row.decode("original_transaction_id"),
            purchaseDate: try row.decode("purchase_date"), expiresDate: try row.decode("expires_date"),
            gracePeriodExpiresDate: try row.decode("grace_period_expires_date"),
            willRenew: try row.decode("will_renew"),
            ownership: try row.decode("ownership", as: String?.self).flatMap(Ownership.init(rawValue:)))
    }
}
