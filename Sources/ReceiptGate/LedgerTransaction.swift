public import Foundation
public import Postgres
public import ReceiptCore

/// A transaction as the ledger holds it, and as the native API shows it (`id` is the
/// management id support quotes).
public struct LedgerTransaction: Sendable, Encodable {
    public let id: Int64
    public let store: String
    public let environment: String
    public let transactionID: String
    public let originalTransactionID: String?
    public let orderID: String?
    public let productID: String?
    public let type: String?
    public let quantity: Int?
    public let priceMilliunits: Int64?
    public let currency: String?
    public let storefront: String?
    public let purchaseDateMs: Int64?
    public let expiresDateMs: Int64?
    public let revocationDateMs: Int64?
    public let revocationReason: String?
    public let ownership: String?
    public let appAccountToken: String?
    public var accountMatch: String
    public let state: String
    let clientID: String
    let gameID: Int64?
    public let firstVerifiedAt: Date

    enum CodingKeys: String, CodingKey {
        case id, store, environment, transactionID = "transaction_id", originalTransactionID = "original_transaction_id"
        case orderID = "order_id", productID = "product_id", type, quantity, priceMilliunits = "price_milliunits", currency, storefront
        case purchaseDateMs = "purchase_date_ms", expiresDateMs = "expires_date_ms", revocationDateMs = "revocation_date_ms"
        case revocationReason = "revocation_reason", ownership, appAccountToken = "app_account_token", accountMatch = "account_match", state
    }

    public func encode(to encoder: any Encoder) throws {
        // Every field is always present (null when unknown): clients can rely on the shape.
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(store, forKey: .store)
        try container.encode(environment, forKey: .environment)
        try container.encode(transactionID, forKey: .transactionID)
        try container.encode(originalTransactionID, forKey: .originalTransactionID)
        try container.encode(orderID, forKey: .orderID)
        try container.encode(productID, forKey: .productID)
        try container.encode(type, forKey: .type)
        try container.encode(quantity, forKey: .quantity)
        try container.encode(priceMilliunits, forKey: .priceMilliunits)
        try container.encode(currency, forKey: .currency)
        try container.encode(storefront, forKey: .storefront)
        try container.encode(purchaseDateMs, forKey: .purchaseDateMs)
        try container.encode(expiresDateMs, forKey: .expiresDateMs)
        try container.encode(revocationDateMs, forKey: .revocationDateMs)
        try container.encode(revocationReason, forKey: .revocationReason)
        try container.encode(ownership, forKey: .ownership)
        try container.encode(appAccountToken, forKey: .appAccountToken)
        try container.encode(accountMatch, forKey: .accountMatch)
        try container.encode(state, forKey: .state)
    }

    static let columns = """
        id, store, environment, transaction_id, original_transaction_id, order_id, product_id, product_kind, quantity,
        price_milliunits, currency, storefront, (extract(epoch from purchase_date) * 1000)::bigint AS purchase_ms,
        (extract(epoch from expires_date) * 1000)::bigint AS expires_ms, (extract(epoch from revocation_date) * 1000)::bigint AS revocation_ms,
        revocation_reason, ownership, account_token, state, client_id, game_id, first_verified_at
        """

    init(row: PostgresRow, accountMatch: String = "not_comparable") throws {
        id = try row.decode("id")
        store = try row.decode("store")
        environment = try row.decode("environment")
        transactionID = try row.decode("transaction_id")
        originalTransactionID = try row.decode("original_transaction_id")
        orderID = try row.decode("order_id")
        productID = try row.decode("product_id")
        type = try row.decode("product_kind")
        quantity = try row.decode("quantity")
        priceMilliunits = try row.decode("price_milliunits")
        currency = try row.decode("currency")
        storefront = try row.decode("storefront")
        purchaseDateMs = try row.decode("purchase_ms")
        expiresDateMs = try row.decode("expires_ms")
        revocationDateMs = try row.decode("revocation_ms")
        revocationReason = try row.decode("revocation_reason")
        ownership = try row.decode("ownership")
        appAccountToken = try row.decode("account_token")
        state = try row.decode("state")
        clientID = try row.decode("client_id")
        gameID = try row.decode("game_id")
        firstVerifiedAt = try row.decode("first_verified_at")
        self.accountMatch = accountMatch
    }

    /// Whether a client may see this transaction: its own, or its game's.
    func isVisible(to client: Client) -> Bool {
        clientID == client.clientID || (gameID != nil && gameID == client.gameID)
    }
}
