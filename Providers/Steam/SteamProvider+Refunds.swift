import Foundation
public import ReceiptCore

extension SteamProvider: OrderRefunding {
    /// Asks Steam to refund the whole order with `RefundTxn` v2
    /// (partner.steamgames.com/doc/webapi/ISteamMicroTxn#RefundTxn: "refunds can only be made for
    /// the full value of the original order"). Steam's report then lists it `Refunded`, and the
    /// report's poll moves the ledger. Throws `StoreVerificationError`.
    public func refundOrder(
        _ orderID: String, environment: StoreEnvironment, owner: ClientWithStoreCredentials
    ) async throws {
        do {
            let access = try SteamAccess.of(owner)
            guard access.environment == environment else {
                throw StoreVerificationError(
                    code: .environmentMismatch, reason: "ENVIRONMENT_NOT_ALLOWED",
                    message: "the client now uses Steam's \(access.sandbox ? "sandbox" : "production"), not the order's"
                )
            }
            _ = try await api.call(
                "POST", access.microTxn, "RefundTxn", version: 2,
                parameters: [("orderid", orderID), ("appid", access.appID)], key: access.key, deadline: nil)
        } catch let error as StoreAPIError {
            throw error.verificationError
        }
    }
}
