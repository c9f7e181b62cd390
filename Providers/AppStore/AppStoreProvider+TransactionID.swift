import Foundation
public import ReceiptCore

/// A bare transaction id, proven by asking the App Store Server API for its signed transaction.
/// Only reached when the caller asked for `EvidenceKind.transactionID` explicitly (an id is no
/// secret); what Apple answers is a JWS verified exactly like one the app sent before anything
/// in it is read.
extension AppStoreProvider {
    /// Why a lookup cannot be made here: a stable reason dialects recognise to name their field.
    public static let transactionLookupNotConfigured = "TRANSACTION_LOOKUP_NOT_CONFIGURED"

    /// App Store transaction ids are decimal, at most 20 digits (they fit in a UInt64).
    static func isTransactionID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 20
            && text.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    func verifyTransactionID(
        _ transactionID: String, context: VerificationContext,
        expecting expectations: AppStoreExpectations
    ) async throws(AppStoreVerificationError) -> [VerifiedPurchase] {
        guard Self.isTransactionID(transactionID) else {
            throw AppStoreVerificationError(.payloadInvalid, "a transaction id is up to 20 decimal digits")
        }
        guard let configuration, configuration.serverAPIKey != nil else {
            throw AppStoreVerificationError(
                AppStoreVerificationError.Reason(rawValue: Self.transactionLookupNotConfigured),
                "a bare transaction id needs the App Store Server API (RECEIPTGATE_APPSTORE_API_*), which is not configured"
            )
        }
        for bundle in context.appIdentifiers.sorted() {
            guard let client = configuration.serverAPIClient(bundleID: bundle, http: http, now: now) else { continue }
            try AppReceiptValidator.checkTimeLeft(
                before: "asking Apple about transaction \(transactionID)", deadline: context.deadline)
            let answer: (signedTransaction: String, environment: AppStoreEnvironment)
            do {
                answer = try await client.transactionInfoInAnyEnvironment(transactionID, preferring: .production)
            } catch  where error.isTransactionNotFound {
                continue  // not this bundle's
            } catch {
                throw AppReceiptValidator.classify(error, transactionID: transactionID)
            }
            let transaction = try await verifyTransaction(answer.signedTransaction, expecting: expectations)
            guard transaction.transactionId == transactionID else {
                throw AppStoreVerificationError(
                    .receiptNotConfirmed, "Apple answered for another transaction than \(transactionID)")
            }
            return [try Self.purchase(from: transaction)]
        }
        throw AppStoreVerificationError(
            .receiptNotConfirmed, "Apple knows no transaction \(transactionID) for this app in either environment")
    }
}
