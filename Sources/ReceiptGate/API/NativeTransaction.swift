import Foundation
import ReceiptCore

/// A transaction in the native API's wire shape (also the webhooks'). Every field is always
/// present, null when unknown, so clients can rely on the shape; `id` is the management id.
struct NativeTransaction: Encodable, Sendable {
    let record: TransactionRecord
    let accountMatch: AccountMatch

    init(_ record: TransactionRecord, accountMatch: AccountMatch = .notComparable) {
        self.record = record
        self.accountMatch = accountMatch
    }

    enum CodingKeys: String, CodingKey {
        case id, store, environment, transactionID = "transaction_id", originalTransactionID = "original_transaction_id"
        case orderID = "order_id", productID = "product_id", type, quantity, priceMilliunits = "price_milliunits",
            currency, storefront
        case purchaseDateMs = "purchase_date_ms", expiresDateMs = "expires_date_ms", revocationDateMs =
            "revocation_date_ms"
        case revocationReason = "revocation_reason", ownership, appAccountToken = "app_account_token"
        case appTransactionID = "app_transaction_id", accountMatch = "account_match", state
        case refund, claim, offer, items, commitment, purchaseOptionID = "purchase_option_id"
    }

    /// How much the store gave back; nil unless refunded or revoked.
    var refund: NativeRefund? { record.refund.map { NativeRefund(detail: $0, purchasedQuantity: record.quantity) } }
    /// The first claim; nil while the purchase is only known from its store.
    var claim: NativeClaimant? { record.claim.map { NativeClaimant(claimant: $0.claimant, claimedAt: $0.claimedAt) } }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(record.managementID, forKey: .id)
        try container.encode(record.store.rawValue, forKey: .store)
        try container.encode(record.environment.rawValue, forKey: .environment)
        try container.encode(record.transactionID, forKey: .transactionID)
        try container.encode(record.originalTransactionID, forKey: .originalTransactionID)
        try container.encode(record.orderID, forKey: .orderID)
        try container.encode(record.productID, forKey: .productID)
        try container.encode(record.kind?.rawValue, forKey: .type)
        try container.encode(record.purchaseOptionID, forKey: .purchaseOptionID)
        try container.encode(record.quantity, forKey: .quantity)
        try container.encode(record.priceMilliunits, forKey: .priceMilliunits)
        try container.encode(record.currency, forKey: .currency)
        try container.encode(record.storefront, forKey: .storefront)
        try container.encode(record.purchaseDate?.epochMilliseconds, forKey: .purchaseDateMs)
        try container.encode(record.expiresDate?.epochMilliseconds, forKey: .expiresDateMs)
        try container.encode(record.revocationDate?.epochMilliseconds, forKey: .revocationDateMs)
        try container.encode(record.revocationReason, forKey: .revocationReason)
        try container.encode(record.ownership?.rawValue, forKey: .ownership)
        try container.encode(record.accountToken, forKey: .appAccountToken)
        try container.encode(record.appTransactionID, forKey: .appTransactionID)
        try container.encode(accountMatch.rawValue, forKey: .accountMatch)
        try container.encode(record.state.rawValue, forKey: .state)
        try container.encode(refund, forKey: .refund)
        try container.encode(claim, forKey: .claim)
        try container.encode(record.offer, forKey: .offer)
        try container.encode(record.items, forKey: .items)
        try container.encode(record.commitment, forKey: .commitment)
    }
}

/// What the delivery message carries: the transaction to grant, and to whom.
struct Delivery: Encodable {
    let transaction: NativeTransaction
    let playerID: String?, characterID: String?, serverID: String?, gameID: Int64?

    enum CodingKeys: String, CodingKey {
        case transaction, playerID = "player_id", characterID = "character_id", serverID = "server_id", gameID =
            "game_id"
        case transactionID = "transaction_id"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transaction.record.transactionID, forKey: .transactionID)
        try container.encode(transaction, forKey: .transaction)
        try container.encode(playerID, forKey: .playerID)
        try container.encode(characterID, forKey: .characterID)
        try container.encode(serverID, forKey: .serverID)
        try container.encode(gameID, forKey: .gameID)
    }
}
