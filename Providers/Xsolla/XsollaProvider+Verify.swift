import Foundation
public import ReceiptCore

extension XsollaProvider {
    /// A transaction id (`123456789`, or `123456789/<sku>` for one item of several) read from
    /// Xsolla's transactions report with the client's merchant id and API key. A paid transaction
    /// answers its purchases; a refunded or canceled one answers them revoked; one not paid yet
    /// (created, processing, under review) is refused.
    public func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase] {
        let receipt = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let named = XsollaTransactionID.parse(receipt) else {
            throw StoreVerificationError(
                code: .invalidField, reason: "INVALID_TRANSACTION_ID",
                message: "an Xsolla receipt is the numeric transaction id (transaction.id of the payment webhook)")
        }
        do {
            let access = try Self.access(client: context.client, credentials: context.credentials)
            let records = try await reports.transaction(named.transaction, access: access, deadline: context.deadline)
            guard
                let record = records.first(where: {
                    XsollaSale(report: $0).transactionID == named.transaction
                })
            else {
                throw XsollaAPIErrors.answered(
                    .notFound, message: "no transaction \(named.transaction) for this merchant", request: "search",
                    retryAfter: nil)
            }
            let sale = XsollaSale(report: record)
            var purchases = try settled(sale)
            if let sku = named.sku {
                purchases = purchases.filter { $0.transactionID == receipt }
                guard !purchases.isEmpty else {
                    throw XsollaAPIErrors.answered(
                        .notFound, message: "transaction \(named.transaction) lists no item \(sku)", request: "search",
                        retryAfter: nil)
                }
            }
            let projects = context.appIdentifiers
            if let project = sale.projectID, !projects.isEmpty, !projects.contains(project) {
                throw StoreVerificationError(
                    code: .bundleMismatch, reason: "PROJECT_MISMATCH",
                    message: "the transaction is Xsolla project \(project)'s, which this client did not register")
            }
            return purchases
        } catch let error as StoreAPIError {
            throw error.verificationError
        }
    }

    /// A report record's purchases as its status has them: paid, or revoked.
    func settled(_ sale: XsollaSale) throws(StoreAPIError) -> [VerifiedPurchase] {
        let status = sale.status ?? "done"
        guard sale.namesAProduct else { throw XsollaAPIErrors.namesNoProduct }
        switch status {
        case "done":
            return sale.purchases(store: store)
        case "refunded", "canceled":
            return sale.purchases(store: store).map { refunded in
                var purchase = refunded
                purchase.revocationDate = now()
                purchase.revocationReason = "refund"
                return purchase
            }
        default:
            throw XsollaAPIErrors.notCompleted(status)
        }
    }
}
