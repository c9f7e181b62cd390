import Foundation
import Postgres
import ReceiptCore

/// Store notifications, kept raw and deduplicated on the store's own id; the first arrival
/// applies its event to the ledger in the same database transaction.
package struct NotificationRepository: Sendable {
    let pool: PostgresPool
    let refundCallbacks: [String: any RefundCallbackRenderer]
    /// How long a refund request's answer waits for the game's report (`RECEIPTGATE_REFUND_REVIEW_DELAY`).
    var refundAnswerDelay: Double = 3600
    /// The service's clock: a billing issue is a grace period only while the store's grace lasts.
    var now: @Sendable () -> Date = { Date() }

    /// What recording a notification did.
    struct Recorded {
        /// The store had sent this notification before: nothing changed.
        let duplicate: Bool
        /// Its event moved the ledger's state (what a webhook tells).
        let changed: Bool
    }

    /// Whether the store's notification is on record already.
    func isRecorded(_ notification: StoreNotification) async throws -> Bool {
        try await !pool.query(
            """
            SELECT 1 FROM store_notifications
            WHERE store = \(notification.store.rawValue) AND notification_id = \(notification.notificationID)
            """
        ).isEmpty
    }

    /// Records the notification once and applies its event. `kind` is how the store names apps:
    /// the notification's app is looked up under it.
    func record(_ notification: StoreNotification, rawBody: Data, kind: AppIdentifierKind?) async throws -> Recorded {
        let decoded = String(decoding: notification.decodedJSON, as: UTF8.self)
        let notice = try notification.operatorNotice.map { notice in
            String(
                decoding: try JSONSerialization.data(
                    withJSONObject: ["message": notice.message, "fields": notice.fields], options: [.sortedKeys]),
                as: UTF8.self)
        }
        let refundCallbacks = refundCallbacks, refundAnswerDelay = refundAnswerDelay, now = now()
        let body = RawBodyCompaction.compact(rawBody)
        return try await pool.withTransaction { connection in
            let inserted = try connection.query(
                """
                INSERT INTO store_notifications (store, notification_id, notification_type, subtype, environment, app_identifier,
                    transaction_id, original_transaction_id, product_id, signed_at, raw_body, raw_format, decoded, operator_notice)
                VALUES (\(notification.store.rawValue), \(notification.notificationID), \(notification.type), \(notification.subtype),
                        \(notification.environment?.rawValue), \(notification.appIdentifier), \(notification.transactionID),
                        \(notification.originalTransactionID), \(notification.productID), \(notification.signedAt), \(body.stored),
                        \(Int(body.format)), \(decoded)::jsonb, \(notice)::jsonb)
                ON CONFLICT (store, notification_id) DO NOTHING
                RETURNING id
                """)
            guard let row = inserted.first else { return Recorded(duplicate: true, changed: false) }
            for (digest, piece) in body.pieces.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
                try connection.execute(
                    """
                    INSERT INTO raw_body_pieces (digest, piece, first_seen_at, last_used_at) VALUES (\(digest), \(piece), \(now), \(now))
                    ON CONFLICT (digest) DO UPDATE SET last_used_at = \(now)
                    WHERE raw_body_pieces.last_used_at < \(now.addingTimeInterval(-86_400))
                    """)
            }
            let changed = try TransactionRepository.apply(
                notification.event, store: notification.store, appIdentifier: notification.appIdentifier,
                kind: kind, clientID: notification.clientID, refundCallbacks: refundCallbacks,
                refundAnswerDelay: refundAnswerDelay,
                at: now, on: connection)
            if let unreported = notification.event.unreportedExternalPurchase {
                // The store's deadline for the token's report passed: the report is owed now.
                _ = try ExternalPurchaseReports.raise(unreported, kind: kind, now: now, on: connection)
            }
            if let revocation = notification.event.consentRevocation {
                try ConsentRevocationLedger.record(revocation, told: notification, kind: kind, on: connection)
            }
            try connection.execute(
                "UPDATE store_notifications SET processed_at = now() WHERE id = \(try row.decode("id", as: Int64.self))"
            )
            return Recorded(duplicate: false, changed: changed)
        }
    }
}
