import Foundation
import Postgres
import ReceiptCore

extension OperatorQueries {
    /// The subscription `record` is a period of, as a store is asked about it (its read-back key,
    /// the app its latest period was bought in); nil for a purchase that is no subscription.
    func subscription(of record: TransactionRecord) async throws -> QuietSubscription? {
        try await pool.query(
            """
            SELECT s.environment, s.original_transaction_id, s.latest_transaction_id, s.product_id, s.expires_date,
                   s.read_back_key, s.client_id, t.app_identifier
            FROM subscriptions s
            LEFT JOIN transactions t ON t.store = s.store AND t.environment = s.environment AND t.transaction_id = s.latest_transaction_id
            WHERE s.store = \(record.store.rawValue) AND s.environment = \(record.environment.rawValue)
              AND s.original_transaction_id = \(record.originalOrSelf)
            """
        ).first.map { row in
            QuietSubscription(
                store: record.store, environment: record.environment,
                originalTransactionID: try row.decode("original_transaction_id", as: String.self),
                latestTransactionID: try row.decode("latest_transaction_id", as: String?.self),
                productID: try row.decode("product_id", as: String?.self),
                expiresDate: try row.decode("expires_date", as: Date?.self),
                appIdentifier: try row.decode("app_identifier", as: String?.self),
                readBackKey: try row.decode("read_back_key", as: String?.self),
                clientID: try row.decode("client_id", as: String.self))
        }
    }
}
