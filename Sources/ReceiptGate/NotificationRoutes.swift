public import Foundation
public import HTTPServer
public import Postgres
public import ReceiptCore

/// `POST` endpoints where stores push server-to-server notifications. Each is proven genuine by
/// its provider, recorded once (deduplicated on the store's notification id, with the raw body
/// kept), and answered 200 fast; a forged one gets 401 and changes nothing.
public struct NotificationRoutes: Sendable {
    let providers: [any NotificationReceiving]
    let pool: PostgresPool
    let logger: Logger
    let refundCallbacks: (any RefundCallbackRendering)?

    public init(providers: [any NotificationReceiving], pool: PostgresPool, logger: Logger, refundCallbacks: (any RefundCallbackRendering)? = nil) {
        self.providers = providers
        self.pool = pool
        self.logger = logger
        self.refundCallbacks = refundCallbacks
    }

    public func register(on router: inout Router) {
        for provider in providers {
            router.post(provider.notificationPath) { [pool, logger, refundCallbacks] request in
                let registered = try await Self.registeredApps(pool)
                let notification: StoreNotification
                do {
                    notification = try await provider.receiveNotification(body: request.body, registered: registered)
                } catch let rejection as NotificationRejection {
                    logger.warning("store notification refused", ["request.id": request.requestID, "store": provider.store.rawValue,
                                                                  "reason": rejection.reason])
                    switch rejection.kind {
                    case .malformed: throw HTTPError(status: 400, code: ErrorCode.invalidField.rawValue, message: rejection.message)
                    case .forged: throw HTTPError(status: 401, code: ErrorCode.unauthorized.rawValue, message: "\(rejection.reason): \(rejection.message)")
                    case .retryable: throw HTTPError(status: 503, code: ErrorCode.verifierError.rawValue, message: rejection.message)
                    }
                }
                let duplicate = try await Self.record(notification, rawBody: request.body, pool: pool, refundCallbacks: refundCallbacks)
                logger.info("store notification recorded", ["request.id": request.requestID, "store": provider.store.rawValue,
                                                            "notification.id": notification.notificationID,
                                                            "notification.type": notification.type, "duplicate": String(duplicate)])
                return .json(Accepted(status: "accepted", duplicate: duplicate, notificationID: notification.notificationID))
            }
        }
    }

    struct Accepted: Encodable {
        let status: String
        let duplicate: Bool
        let notificationID: String
        enum CodingKeys: String, CodingKey { case status, duplicate, notificationID = "notification_id" }
    }

    /// Every bundle id, package name and environment some enabled client registered.
    static func registeredApps(_ pool: PostgresPool) async throws -> RegisteredApps {
        let rows = try await pool.query("SELECT bundle_ids, package_names, environments FROM clients WHERE disabled_at IS NULL")
        var apps = RegisteredApps()
        for row in rows {
            apps.bundleIDs.formUnion(try row.decode("bundle_ids", as: [String].self))
            apps.packageNames.formUnion(try row.decode("package_names", as: [String].self))
            apps.environments.formUnion(try row.decode("environments", as: [String].self).compactMap(StoreEnvironment.init(rawValue:)))
        }
        return apps
    }

    /// Inserts once and, the first time only, applies the event to the ledger in the same
    /// database transaction. Returns true if the store had sent this notification before.
    static func record(_ notification: StoreNotification, rawBody: Data, pool: PostgresPool,
                       refundCallbacks: (any RefundCallbackRendering)?) async throws -> Bool {
        let decoded = String(decoding: notification.decodedJSON, as: UTF8.self)
        return try await pool.withTransaction { connection in
            let inserted = try connection.query("""
                INSERT INTO store_notifications (store, notification_id, notification_type, subtype, environment, app_identifier,
                    transaction_id, original_transaction_id, product_id, signed_at, raw_body, decoded)
                VALUES (\(notification.store.rawValue), \(notification.notificationID), \(notification.type), \(notification.subtype),
                        \(notification.environment?.rawValue), \(notification.appIdentifier), \(notification.transactionID),
                        \(notification.originalTransactionID), \(notification.productID), \(notification.signedAt), \(rawBody), \(decoded)::jsonb)
                ON CONFLICT (store, notification_id) DO NOTHING
                RETURNING id
                """)
            guard let row = inserted.first else { return true }
            try Ledger.apply(notification.event, store: notification.store, appIdentifier: notification.appIdentifier,
                             refundCallbacks: refundCallbacks, on: connection)
            try connection.execute("UPDATE store_notifications SET processed_at = now() WHERE id = \(try row.decode("id", as: Int64.self))")
            return false
        }
    }
}
