import Foundation
import Postgres
import ReceiptCore

extension OperatorQueries {
    /// The subscription `record` is a period of, as a store is asked about it (its read-back key,
    /// the app its latest period was bought in); nil for a purchase that is no subscription.
    func subscription(of record: TransactionRecord) async throws -> QuietSubscription? {
        try await pool.query(
            """
            SELECT \(unescaped: QuietSubscriptionQueries.columns)
            FROM subscriptions s
            LEFT JOIN transactions t ON t.store = s.store AND t.environment = s.environment AND t.transaction_id = s.latest_transaction_id
            WHERE s.store = \(record.store.rawValue) AND s.environment = \(record.environment.rawValue)
              AND s.original_transaction_id = \(record.originalOrSelf)
            """
        ).first.map { try QuietSubscriptionQueries.subscription($0, store: record.store) }
    }
}
