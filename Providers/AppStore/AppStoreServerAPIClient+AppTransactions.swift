package import ReceiptCore

/// The App Store Server API's calls about a buyer's account in the app and a purchase's finish:
/// Get App Transaction Info (`GET /inApps/v1/transactions/appTransactions/{transactionId}`, API
/// 1.17, answering `AppTransactionInfoResponse`) and Finish Transaction
/// (`POST /inApps/v1/transactions/{transactionId}/finish`, API 1.20, no body either way), as
/// Apple's reference and `api_client.py` of app-store-server-library describe them.
extension AppStoreServerAPIClient {
    /// The signed app transaction of the buyer of `transactionID` (any transaction id,
    /// original transaction id or app transaction id of theirs).
    package func appTransactionInfo(
        _ transactionID: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> String {
        struct Body: Decodable { let signedAppTransactionInfo: String? }
        let body: Body = try await send(
            "GET", "/inApps/v1/transactions/appTransactions/\(try Self.pathSegment(transactionID))",
            environment: environment)
        guard let signed = body.signedAppTransactionInfo else {
            throw AppleAPIErrors.malformed("no signedAppTransactionInfo")
        }
        return signed
    }

    /// Get App Transaction Info in production, then in the sandbox when Apple knows neither the
    /// transaction nor an app transaction of it there (4040010, 4040019): an id says nothing of
    /// its environment.
    package func appTransactionInfoInAnyEnvironment(
        _ transactionID: String
    ) async throws(StoreAPIError) -> String {
        do {
            return try await appTransactionInfo(transactionID, environment: .production)
        } catch  where error.isTransactionNotFound || error.isAppTransactionNotFound {
            return try await appTransactionInfo(transactionID, environment: .sandbox)
        }
    }

    /// Tells Apple the purchase was delivered from the server, so StoreKit stops offering it to
    /// the app as unfinished. Finishing twice is harmless: Apple answers 200 again.
    package func finishTransaction(
        _ transactionID: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) {
        let _: Empty = try await send(
            "POST", "/inApps/v1/transactions/\(try Self.pathSegment(transactionID))/finish",
            environment: environment, emptyAllowed: true)
    }
}
