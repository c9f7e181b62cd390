import Foundation
import Postgres
import ReceiptCore

extension OutboxRepository {
    /// Queues a purchase's account token for its store unless one was ever queued for that
    /// purchase: the unique index `outbox_store_account_token_once` decides, under any concurrency
    /// (a re-sent request, two links at once), never a read first. True when it was queued now.
    static func enqueue(_ assignment: AccountTokenAssignment, on connection: PostgresConnection) throws -> Bool {
        let body = String(decoding: try JSONEncoder.receiptGateStorage.encode(assignment), as: UTF8.self)
        return try connection.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, payload, target)
            VALUES (\(UUID.timeOrdered()), \(assignment.clientID), \("store.account_token"), \(assignment.aggregateKey), \(body)::jsonb,
                    \(OutboxTarget.storeAccountToken.rawValue))
            ON CONFLICT (aggregate_key) WHERE target = 'store_account_token' DO NOTHING
            """) == 1
    }
}
