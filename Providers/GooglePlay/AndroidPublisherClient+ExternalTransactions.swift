import Foundation
import ReceiptCore

/// Google Play's external transactions (androidpublisher v3 `externaltransactions`):
/// `createexternaltransaction` (`POST …/externalTransactions?externalTransactionId=ID`),
/// `refundexternaltransaction` (`POST …/externalTransactions/{id}:refund`) and
/// `getexternaltransaction` (`GET …/externalTransactions/{id}`).
extension AndroidPublisherClient {
    func createExternalTransaction(package: String, id: String, body: Data, key: ServiceAccountKey) async throws {
        _ = try await send(
            "POST", "\(application(package))/externalTransactions?externalTransactionId=\(segment(id))", key: key,
            body: body)
    }

    func refundExternalTransaction(package: String, id: String, body: Data, key: ServiceAccountKey) async throws {
        _ = try await send(
            "POST", "\(application(package))/externalTransactions/\(segment(id)):refund", key: key, body: body)
    }

    /// The transaction as Google holds it; nil when Google does not know it.
    func externalTransaction(package: String, id: String, key: ServiceAccountKey) async throws -> Data? {
        do {
            return try await send("GET", "\(application(package))/externalTransactions/\(segment(id))", key: key)
        } catch let error as StoreAPIError where error.kind == .notFound {
            return nil
        }
    }
}
