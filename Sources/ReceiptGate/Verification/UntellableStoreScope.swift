import ReceiptCore

/// The record's scope as a dialect sees it when the purchase's store cannot be told account
/// tokens (its provider declares no `AccountTokenSetting`, or not with this deployment's
/// settings): everything else passes through; a store is never queued a message it cannot take.
struct UntellableStoreScope: RecordScope {
    let base: any RecordScope

    func enqueue(_ message: OutboxMessage) throws { try base.enqueue(message) }
    func linkPurchase(_ key: PurchaseKey, to accountID: String) throws -> String {
        try base.linkPurchase(key, to: accountID)
    }
    func linkedAccount(_ key: PurchaseKey) throws -> AccountRecord? { try base.linkedAccount(key) }
    func createAccount(_ draft: AccountDraft) throws -> AccountRecord { try base.createAccount(draft) }
    func setPendingEmail(_ email: String?, accountID: String) throws {
        try base.setPendingEmail(email, accountID: accountID)
    }
    func tellStore(accountToken: String, for transaction: TransactionRecord) throws -> Bool { false }
}
