/// A store the operator may ask to give a buyer's money back for an order (its own refund call):
/// the ledger does not move on the asking, only when the store's own record says the refund
/// happened (its report, read on schedule), so what the ledger shows is always what the store did.
public protocol OrderRefunding: Sendable {
    /// Asks the store to refund the whole order `orderID` of `owner`'s app. Throws
    /// `StoreVerificationError` when the store refuses or cannot be asked.
    func refundOrder(_ orderID: String, environment: StoreEnvironment, owner: ClientWithStoreCredentials) async throws
}
