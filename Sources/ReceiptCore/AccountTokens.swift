public import Foundation

/// What a store is told when a purchase is linked to one of the game's accounts after the sale
/// (the buyer bought outside the app, or the app set no account token): the account's token for
/// the purchase's original transaction, so the store's later records of it (renewals, refunds,
/// notifications) carry the account's token like a purchase made with it. Queued in the outbox
/// with the link, sent by the worker through the store's provider.
public struct AccountTokenAssignment: Codable, Sendable, Equatable {
    public var store: StoreID
    public var environment: StoreEnvironment
    /// The client whose store credentials send it.
    public var clientID: String
    /// The app the purchase belongs to, in the store's kind of identifier.
    public var appIdentifier: String?
    /// Only the original transaction: the token belongs to the purchase, not to one period of it.
    public var originalTransactionID: String
    /// The account's token (a UUID, lower case).
    public var accountToken: String

    public init(
        store: StoreID, environment: StoreEnvironment, clientID: String, appIdentifier: String?,
        originalTransactionID: String,
        accountToken: String
    ) {
        self.store = store
        self.environment = environment
        self.clientID = clientID
        self.appIdentifier = appIdentifier
        self.originalTransactionID = originalTransactionID
        self.accountToken = accountToken
    }

    /// The one rule for whether a purchase linked to an account has its store told the account's
    /// token, for the service and the tests' fake core alike: only a purchase that carried no token
    /// of its own (one it carried is the app's word, never overwritten), and never a family-shared
    /// one (it is the family organizer's purchase, and stores refuse to set it). Whether the
    /// purchase's store can be told at all is the caller's to check. Nil when nothing is owed.
    public static func owed(for transaction: TransactionRecord, accountToken: String) -> AccountTokenAssignment? {
        guard !accountToken.isEmpty, transaction.accountToken?.isEmpty ?? true, transaction.ownership != .familyShared
        else { return nil }
        return AccountTokenAssignment(
            store: transaction.store, environment: transaction.environment, clientID: transaction.clientID,
            appIdentifier: transaction.appIdentifier, originalTransactionID: transaction.originalOrSelf,
            accountToken: accountToken)
    }

    /// The outbox's key for it: one message per purchase, ever (the outbox refuses a second).
    public var aggregateKey: String { "\(store.rawValue):\(originalTransactionID)" }
}

/// A store provider that can be told, after the sale, which account a purchase belongs to.
public protocol AccountTokenSetting: Sendable {
    /// Sends it with the client's secret settings for this store (`credentials`, possibly empty).
    /// Throws `StoreVerificationError`: retryable for the store's 5xx and 429 and for no answer at
    /// all (the outbox tries again later); any other refusal is final, and its message carries the
    /// store's own error code.
    func setAccountToken(_ assignment: AccountTokenAssignment, credentials: [String: String]) async throws
}
