import Foundation
import ReceiptCore

// The `data` objects of the two verify routes, field names to the letter of Hive Axyl's contract. Every
// field is always present; what the store does not say is null.

/// 1 match, 2 mismatch, 9 not comparable (either side missing).
func hiveAxylAccountCompare(_ match: AccountMatch) -> Int {
    switch match {
    case .match: 1
    case .mismatch: 2
    case .notComparable: 9
    }
}

/// `"Y"` for Sandbox / test purchases, `"N"` for production.
func hiveAxylTestFlag(_ environment: StoreEnvironment) -> String { environment == .production ? "N" : "Y" }

struct HiveAxylPurchaseData: Encodable {
    let transaction: TransactionRecord
    let duplicate: Bool
    let accountMatch: AccountMatch

    enum Keys: String, CodingKey {
        case hiveAxylPurchaseCancelState, hiveAxylDuplicated, hiveAxylAccountUuidCompare, hiveAxylPurchaseTest,
            hiveAxylProductId
        case hiveAxylQuantity, hiveAxylPrice, hiveAxylCurrency, hiveAxylStoreTransactionId,
            hiveAxylOriginalStoreTransactionId
        case hiveAxylPurchaseDate
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        // Refunded or revoked, now: the contract's "stop product delivery".
        try container.encode(transaction.state.isWithdrawn ? 1 : 0, forKey: .hiveAxylPurchaseCancelState)
        try container.encode(duplicate, forKey: .hiveAxylDuplicated)
        try container.encode(hiveAxylAccountCompare(accountMatch), forKey: .hiveAxylAccountUuidCompare)
        try container.encode(hiveAxylTestFlag(transaction.environment), forKey: .hiveAxylPurchaseTest)
        try container.encode(transaction.productID, forKey: .hiveAxylProductId)
        try container.encode(transaction.quantity, forKey: .hiveAxylQuantity)
        try container.encode(transaction.priceMilliunits.map(Self.currencyUnits), forKey: .hiveAxylPrice)
        try container.encode(transaction.currency, forKey: .hiveAxylCurrency)
        try container.encode(transaction.transactionID, forKey: .hiveAxylStoreTransactionId)
        try container.encode(transaction.originalOrSelf, forKey: .hiveAxylOriginalStoreTransactionId)
        try container.encode(transaction.purchaseDate?.epochMilliseconds, forKey: .hiveAxylPurchaseDate)
    }

    /// Milliunits as a decimal number of currency units (990 → 0.99), exactly.
    static func currencyUnits(_ milliunits: Int64) -> Decimal {
        Decimal(sign: milliunits < 0 ? .minus : .plus, exponent: -3, significand: Decimal(milliunits.magnitude))
    }
}

struct HiveAxylSubscriptionData: Encodable {
    /// The ledger's subscription: its latest period, status, expiry and refund.
    let state: SubscriptionState
    /// The transaction the receipt carried, as recorded.
    let transaction: TransactionRecord
    let duplicate: Bool
    let accountMatch: AccountMatch

    enum Keys: String, CodingKey {
        case hiveAxylExpiresDate, hiveAxylRefundDate, hiveAxylDuplicated, hiveAxylAccountUuidCompare, hiveAxylProductId
        case hiveAxylStoreTransactionId, hiveAxylOriginalStoreTransactionId, hiveAxylPurchaseTest, hiveAxylAutoRenew
        case hiveAxylSubscriptionState
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(state.expiresDate?.epochMilliseconds, forKey: .hiveAxylExpiresDate)
        let reclaimed = state.status == .refunded || state.status == .revoked
        try container.encode(
            reclaimed ? (state.revocationDate ?? transaction.revocationDate)?.epochMilliseconds : nil,
            forKey: .hiveAxylRefundDate)
        try container.encode(duplicate, forKey: .hiveAxylDuplicated)
        try container.encode(hiveAxylAccountCompare(accountMatch), forKey: .hiveAxylAccountUuidCompare)
        try container.encode(state.productID ?? transaction.productID, forKey: .hiveAxylProductId)
        try container.encode(
            state.latestTransactionID ?? transaction.transactionID, forKey: .hiveAxylStoreTransactionId)
        try container.encode(state.originalTransactionID, forKey: .hiveAxylOriginalStoreTransactionId)
        try container.encode(hiveAxylTestFlag(state.environment), forKey: .hiveAxylPurchaseTest)
        try container.encode(state.autoRenew, forKey: .hiveAxylAutoRenew)
        try container.encode(state.status.rawValue, forKey: .hiveAxylSubscriptionState)
    }
}
