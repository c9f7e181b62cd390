import Foundation
public import ReceiptCore

/// Finish Transaction (App Store Server API 1.20, `POST /inApps/v1/transactions/{transactionId}/finish`):
/// for a client that asks (`--appstore-finish-transactions on`), a consumable is finished from the
/// server after its first claim commits, so a purchase whose app stopped before calling
/// `finish()` is not offered to it again. Queued with the record and sent by the outbox worker, as
/// every store acknowledgement is; it needs the App Store Server API key.
extension AppStoreProvider: PurchaseAcknowledging {
    public func acknowledgement(for purchase: VerifiedPurchase, client: ClientInfo) -> StoreAcknowledgement? {
        guard purchase.store == store, purchase.kind == .consumable,
            client.setting(Setting.finishTransactions) == "on", let bundleID = purchase.appIdentifier
        else { return nil }
        return StoreAcknowledgement(
            store: store, clientID: client.clientID,
            parameters: [
                "action": "finish", "transaction_id": purchase.transactionID, "bundle_id": bundleID,
                "environment": purchase.environment.rawValue,
            ])
    }

    /// Any error makes the outbox try again later; Apple answers a second finish with 200 too.
    public func acknowledge(_ acknowledgement: StoreAcknowledgement, credentials: [String: String]) async throws {
        let parameters = acknowledgement.parameters
        guard parameters["action"] == "finish", let transactionID = parameters["transaction_id"],
            let bundleID = parameters["bundle_id"],
            let environment = parameters["environment"].flatMap(StoreEnvironment.init(rawValue:))
        else {
            throw StoreVerificationError(
                code: .verifierError, reason: "STORE_ACKNOWLEDGEMENT_INVALID",
                message: "an App Store acknowledgement names no transaction to finish")
        }
        guard let client = configuration?.serverAPIClient(bundleID: bundleID, http: http, now: now) else {
            throw StoreVerificationError(
                code: .verifierError, reason: AppStoreVerificationError.Reason.misconfigured.rawValue,
                message: "finishing a transaction needs the App Store Server API (RECEIPTGATE_APPSTORE_API_*)")
        }
        do {
            try await client.finishTransaction(transactionID, environment: Self.appStoreEnvironment(environment))
        } catch {
            throw StoreVerificationError(
                code: .verifierError, reason: error.reason, message: error.message,
                isRetryable: error.kind == .unavailable)
        }
    }
}
