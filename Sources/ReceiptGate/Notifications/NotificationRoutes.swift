import Foundation
import Postgres
import ReceiptCore

/// `POST` endpoints where stores push server-to-server notifications. Each is proven genuine by
/// its provider, recorded once (deduplicated on the store's notification id, with the raw body
/// kept), and answered 200 fast; a forged one gets 401 and changes nothing; one the store's own
/// record shows nothing about is answered 200 `ignored` and kept nowhere. A caller address that
/// sends more than its budget is answered 429 before anything is proven.
struct NotificationRoutes: Sendable {
    let stores: [StoreRegistration]
    let clients: ClientRepository
    let notifications: NotificationRepository

    var routes: [Route] {
        stores.compactMap { registration in
            registration.notifications.map { receiver in
                Route(
                    "POST", receiver.notificationPath, authentication: .none,
                    rateLimits: [Self.perAddress(registration.store)]
                ) { request, context in
                    await receive(request, context: context, store: registration.declaration, receiver: receiver)
                }
            }
        }
    }

    /// Anyone may post here, and proving a notification costs work (for some stores, a
    /// certificate fetch), so each caller address gets a budget per store route, counted in this
    /// process's memory. Generous: a store sends from few addresses, in bursts.
    static func perAddress(_ store: StoreID) -> RateLimitPolicy {
        RateLimitPolicy(
            name: "notifications.\(store.rawValue).address", key: .callerAddress, limit: 600, window: .seconds(60),
            shared: false)
    }

    struct Accepted: Encodable {
        let status: String
        let duplicate: Bool
        let notificationID: String
        enum CodingKeys: String, CodingKey { case status, duplicate, notificationID = "notification_id" }
    }

    /// Nothing to record (the store's own record holds nothing the notification is about): 200,
    /// so a store that sent it stops sending it, and no row.
    struct Ignored: Encodable {
        let status: String
        let reason: String
        let message: String
    }

    /// A value the database cannot take (a NUL character, text that is not valid) came from the
    /// sender: its mistake, answered as one, not as an outage the sender would retry for ever.
    static func isUnstorable(_ error: PostgresError) -> Bool {
        error.code == .invalidParameter || error.sqlState?.hasPrefix("22") == true
    }

    static var unstorable: RouteResponse {
        NativeAPI.error(
            .invalidField,
            "the notification holds a value that cannot be kept or looked up (a NUL character or invalid text)")
    }

    private func receive(
        _ request: RouteRequest, context: RouteContext, store declaration: StoreDeclaration,
        receiver: any NotificationReceiving
    ) async -> RouteResponse {
        let store = declaration.store
        let notification: StoreNotification
        do {
            let registered = try await clients.registeredApps(declaration.identifiers)
            let clients = clients
            let owner: @Sendable (String) async throws -> ClientWithStoreCredentials? = { app in
                try await clients.owner(ofApp: app, store: declaration)
            }
            let ownerBySetting: @Sendable (String, String) async throws -> ClientWithStoreCredentials? = {
                name, value in
                try await clients.owner(withSetting: name, value: value, store: declaration)
            }
            notification = try await receiver.receiveNotification(
                NotificationRequest(
                    body: request.body, headers: request.headers, query: context.query,
                    owner: owner, ownerBySetting: ownerBySetting),
                registered: registered)
        } catch let rejection as NotificationRejection {
            if rejection.kind == .ignored {
                context.logger.info(
                    "store notification ignored", ["store": store.rawValue, "reason": rejection.reason])
                return .json(Ignored(status: "ignored", reason: rejection.reason, message: rejection.message))
            }
            context.logger.warning("store notification refused", ["store": store.rawValue, "reason": rejection.reason])
            switch rejection.kind {
            case .malformed: return NativeAPI.error(.invalidField, rejection.message)
            case .forged: return NativeAPI.error(.unauthorized, "\(rejection.reason): \(rejection.message)")
            case .retryable, .ignored: return Self.unavailable(rejection.message)
            }
        } catch let error as PostgresError where Self.isUnstorable(error) {
            context.logger.warning(
                "store notification refused", ["store": store.rawValue, "reason": "UNSTORABLE_VALUE"])
            return Self.unstorable
        } catch {
            context.logger.error(
                "store notification could not be checked", ["store": store.rawValue, "error": "\(error)"])
            return Self.unavailable("the notification could not be processed now; send it again")
        }
        if let problem = notification.event.purchase?.dateOutOfRange {
            context.logger.warning(
                "store notification refused", ["store": store.rawValue, "reason": "DATE_OUT_OF_RANGE"])
            return NativeAPI.error(.invalidField, "the notification's \(problem) is not a plausible date")
        }
        do {
            let duplicate = try await notifications.record(
                notification, rawBody: notification.rawBody ?? request.body, kind: declaration.identifiers
            ).duplicate
            context.logger.info(
                "store notification recorded",
                [
                    "store": store.rawValue, "notification.id": notification.notificationID,
                    "notification.type": notification.type, "duplicate": String(duplicate),
                ])
            if let notice = notification.operatorNotice {
                let fields = ["store": store.rawValue, "notification.id": notification.notificationID]
                context.logger.warning(notice.message, notice.fields.merging(fields) { _, core in core })
            }
            return .json(
                Accepted(status: "accepted", duplicate: duplicate, notificationID: notification.notificationID))
        } catch let error as PostgresError where Self.isUnstorable(error) {
            context.logger.warning(
                "store notification refused", ["store": store.rawValue, "reason": "UNSTORABLE_VALUE"])
            return Self.unstorable
        } catch {
            context.logger.error("store notification not recorded", ["store": store.rawValue, "error": "\(error)"])
            return Self.unavailable("the notification could not be recorded now; send it again")
        }
    }

    /// 503 makes the store send it again later.
    static func unavailable(_ message: String) -> RouteResponse {
        .json(["error": ErrorCode.verifierError.rawValue, "message": message], status: 503)
    }
}
