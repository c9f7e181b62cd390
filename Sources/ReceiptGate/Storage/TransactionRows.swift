import Foundation
import Postgres
import ReceiptCore

/// How ledger rows become the typed model, in one place.
enum TransactionRows {
    /// The columns `transaction(_:)` reads back (a new row's values are `TransactionColumns`).
    static let columns = """
        id, store, environment, transaction_id, original_transaction_id, order_id, product_id, product_kind, quantity,
        price_milliunits, currency, storefront, purchase_date, expires_date, revocation_date,
        revocation_reason, ownership, account_token, app_transaction_id, app_identifier, state, client_id, game_id, first_verified_at,
        refund_store_type, refund_partial, refund_percentage_milliunits, refunded_quantity,
        claimed_at, player_id, character_id, server_id, game_version, purchase_option_id, offer, commerce_items, commitment
        """

    /// The client's row of one transaction, inside the caller's database transaction.
    static func find(
        store: StoreID, environment: StoreEnvironment, transactionID: String, clientID: String,
        on connection: PostgresConnection
    ) throws -> TransactionRecord? {
        try connection.query(
            """
            SELECT \(unescaped: columns) FROM transactions
            WHERE store = \(store.rawValue) AND environment = \(environment.rawValue)
              AND transaction_id = \(transactionID) AND client_id = \(clientID)
            """
        ).first.map(transaction)
    }

    static func transaction(_ row: PostgresRow) throws -> TransactionRecord {
        var record = TransactionRecord(
            managementID: try row.decode("id"), store: StoreID(rawValue: try row.decode("store")),
            environment: try typed(row, "environment", as: StoreEnvironment.self),
            transactionID: try row.decode("transaction_id"), state: try typed(row, "state", as: TransactionState.self),
            clientID: try row.decode("client_id"), firstVerifiedAt: try row.decode("first_verified_at"))
        record.originalTransactionID = try row.decode("original_transaction_id")
        record.orderID = try row.decode("order_id")
        record.productID = try row.decode("product_id")
        record.kind = try row.decode("product_kind", as: String?.self).flatMap(ProductKind.init(rawValue:))
        record.purchaseOptionID = try row.decode("purchase_option_id")
        record.quantity = try row.decode("quantity")
        record.priceMilliunits = try row.decode("price_milliunits")
        record.currency = try row.decode("currency")
        record.storefront = try row.decode("storefront")
        record.purchaseDate = try row.decode("purchase_date")
        record.expiresDate = try row.decode("expires_date")
        record.revocationDate = try row.decode("revocation_date")
        record.revocationReason = try row.decode("revocation_reason")
        record.ownership = try row.decode("ownership", as: String?.self).flatMap(Ownership.init(rawValue:))
        record.accountToken = try row.decode("account_token")
        record.appTransactionID = try row.decode("app_transaction_id")
        record.appIdentifier = try row.decode("app_identifier")
        record.gameID = try row.decode("game_id")
        record.refund = try refund(row)
        try PurchaseTermsColumns.read(row, into: &record)
        if let claimedAt: Date = try row.decode("claimed_at") {
            record.claim = Claim(
                claimant: Claimant(
                    playerID: try row.decode("player_id"), characterID: try row.decode("character_id"),
                    serverID: try row.decode("server_id"), gameVersion: try row.decode("game_version")),
                claimedAt: claimedAt)
        }
        return record
    }

    /// What the store said of a refund: once the row was refunded or revoked, or of a part
    /// refunded with the purchase kept.
    private static func refund(_ row: PostgresRow) throws -> RefundDetail? {
        let detail = RefundDetail(
            storeType: try row.decode("refund_store_type"), storeSaysPartial: try row.decode("refund_partial"),
            percentageMilliunits: try row.decode("refund_percentage_milliunits"),
            quantity: try row.decode("refunded_quantity"))
        guard try row.decode("revocation_date", as: Date?.self) != nil || detail != RefundDetail() else { return nil }
        return detail
    }

    static let subscriptionColumns = """
        store, environment, original_transaction_id, product_id, status, auto_renew, expires_date, grace_period_expires_date,
        revocation_date, latest_transaction_id
        """

    static func subscription(_ row: PostgresRow) throws -> SubscriptionState {
        var state = SubscriptionState(
            store: StoreID(rawValue: try row.decode("store")),
            environment: try typed(row, "environment", as: StoreEnvironment.self),
            originalTransactionID: try row.decode("original_transaction_id"),
            status: try typed(row, "status", as: SubscriptionStatus.self))
        state.productID = try row.decode("product_id")
        state.autoRenew = try row.decode("auto_renew")
        state.expiresDate = try row.decode("expires_date")
        state.gracePeriodExpiresDate = try row.decode("grace_period_expires_date")
        state.revocationDate = try row.decode("revocation_date")
        state.latestTransactionID = try row.decode("latest_transaction_id")
        return state
    }

    /// A text column holding one of our enums; anything else is a corrupt row, not a guess.
    static func typed<T: RawRepresentable>(_ row: PostgresRow, _ column: String, as type: T.Type) throws -> T
    where T.RawValue == String {
        let text: String = try row.decode(column)
        guard let value = T(rawValue: text) else {
            throw PostgresError(.decodingFailed, "column \(column) holds unknown value \(text)")
        }
        return value
    }
}
