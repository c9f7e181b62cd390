public import Foundation
public import ReceiptCore

/// Set App Account Token (App Store Server API 1.16): a purchase made outside the app (an offer
/// code redeemed in the App Store, a purchase on another device without the app's token) carries
/// no `appAccountToken`; once it is linked to an account, Apple is told the account's UUID for its
/// original transaction, and its renewals, refunds and notifications carry it from then on.
extension AppStoreProvider: AccountTokenSetting {
    public func setAccountToken(_ assignment: AccountTokenAssignment, credentials: [String: String]) async throws {
        guard let configuration, configuration.serverAPIKey != nil else {
            // Kept for when the key is back: the outbox retries until it gives up.
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_NOT_CONFIGURED",
                message:
                    "setting app account tokens needs the App Store Server API key (RECEIPTGATE_APPSTORE_API_KEY_ID, _ISSUER_ID, _KEY_PATH)",
                isRetryable: true)
        }
        guard let bundleID = assignment.appIdentifier,
            let api = configuration.serverAPIClient(bundleID: bundleID, http: http, now: now)
        else {
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_ACCOUNT_TOKEN_REFUSED",
                message: "the purchase names no bundle id to sign the App Store Server API request for")
        }
        // Apple takes only a UUID (InvalidAppAccountTokenUUIDError, 4000183): anything else is not sent.
        guard let token = UUID(uuidString: assignment.accountToken) else {
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_ACCOUNT_TOKEN_REFUSED",
                message: "the account token is not a UUID, which is all the App Store takes")
        }
        do {
            try await api.setAppAccountToken(
                assignment.originalTransactionID, appAccountToken: token,
                environment: Self.appStoreEnvironment(assignment.environment))
        } catch {
            // Apple's errorCode is in the description (4000185 family-shared, 4000187 not an original transaction id...).
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_ACCOUNT_TOKEN_REFUSED", message: error.message,
                isRetryable: error.kind == .unavailable)
        }
    }
}
