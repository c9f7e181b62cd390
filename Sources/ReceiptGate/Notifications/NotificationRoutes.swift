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
    let intake: StoreNewsIntake

    /// The path parameter of a route that belongs to one client.
    static let clientParameter = "client_id"

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

    private func receive(
        _ request: RouteRequest, context: RouteContext, store declaration: StoreDeclaration,
        receiver: any NotificationReceiving
    ) async -> RouteResponse {
        let answer = { (outcome: NotificationOutcome, core: RouteResponse) -> RouteResponse in
            receiver.answer(to: outcome).map(Self.response) ?? core
        }
        let store = declaration.store
        let found: [StoreNotification]
        var pathClient: ClientWithStoreCredentials?
        do {
            if receiver.notificationPath.hasSuffix("/{\(Self.clientParameter)}") {
                let id = context.pathParameters[Self.clientParameter] ?? ""
                guard let client = try await clients.owner(clientID: id, store: declaration) else {
                    return answer(
                        .unknownClient,
                        NativeAPI.error(.notFound, "no client with an app of \(declaration.displayName) has this id"))
                }
                pathClient = client
            }
            // A route that is one client's is about that client's apps only: no other client is read.
            let registered: RegisteredApps
            if let pathClient {
                registered = RegisteredApps(
                    appIdentifiers: Set(pathClient.client.appIdentifiers(declaration.identifiers)),
                    environments: pathClient.client.environments)
            } else {
                registered = try await clients.registeredApps(declaration.identifiers)
            }
            found = try await receiver.receiveNotifications(
                notificationRequest(request, context: context, store: declaration, pathClient: pathClient),
                registered: registered)
        } catch let rejection as NotificationRejection {
            if rejection.kind == .ignored {
                context.logger.info(
                    "store notification ignored", ["store": store.rawValue, "reason": rejection.reason])
                return answer(
                    .refused(rejection),
                    .json(Ignored(status: "ignored", reason: rejection.reason, message: rejection.message)))
            }
            context.logger.warning("store notification refused", ["store": store.rawValue, "reason": rejection.reason])
            return answer(.refused(rejection), Self.refusal(rejection))
        } catch let error as PostgresError where Self.isUnstorable(error) {
            return answer(.refused(Self.unstorableRejection), Self.unstorable(store, context: context))
        } catch {
            context.logger.error(
                "store notification could not be checked", ["store": store.rawValue, "error": "\(error)"])
            return answer(.unavailable, Self.unavailable("the notification could not be processed now; send it again"))
        }
        for notification in found {
            if let problem = notification.event.purchase?.dateOutOfRange {
                context.logger.warning(
                    "store notification refused", ["store": store.rawValue, "reason": "DATE_OUT_OF_RANGE"])
                let rejection = NotificationRejection(
                    .malformed, reason: "DATE_OUT_OF_RANGE",
                    message: "the notification's \(problem) is not a plausible date")
                return answer(.refused(rejection), NativeAPI.error(.invalidField, rejection.message))
            }
        }
        var ids: [String] = [], allDuplicates = true
        do {
            for var notification in found {
                if let pathClient { notification.clientID = pathClient.client.clientID }
                let duplicate = try await intake.take(
                    notification, rawBody: notification.rawBody ?? request.body, kind: declaration.identifiers,
                    requestID: context.requestID
                ).duplicate
                allDuplicates = allDuplicates && duplicate
                ids.append(notification.notificationID)
                context.logger.info(
                    "store notification recorded",
                    [
                        "store": store.rawValue, "notification.id": notification.notificationID,
                        "notification.type": notification.type, "duplicate": String(duplicate),
                    ])
                if let token = notification.event.unreportedExternalPurchase, !duplicate {
                    // An alert: a report the store required is late (docs/operations.md).
                    context.logger.warning(
                        "the store says an external purchase token is unreported; its report is sent now",
                        ["store": store.rawValue, "app": token.appIdentifier, "token.report_id": token.reportID])
                }
                if let notice = notification.operatorNotice {
                    let fields = ["store": store.rawValue, "notification.id": notification.notificationID]
                    context.logger.warning(notice.message, notice.fields.merging(fields) { _, core in core })
                }
            }
        } catch let rejection as NotificationRejection {
            context.logger.warning("store notification refused", ["store": store.rawValue, "reason": rejection.reason])
            return answer(.refused(rejection), Self.refusal(rejection))
        } catch let error as PostgresError where Self.isUnstorable(error) {
            return answer(.refused(Self.unstorableRejection), Self.unstorable(store, context: context))
        } catch {
            context.logger.error("store notification not recorded", ["store": store.rawValue, "error": "\(error)"])
            return answer(.unavailable, Self.unavailable("the notification could not be recorded now; send it again"))
        }
        return answer(
            .accepted(duplicate: allDuplicates),
            .json(Accepted(status: "accepted", duplicate: allDuplicates, notificationID: ids.joined(separator: ","))))
    }

    private func notificationRequest(
        _ request: RouteRequest, context: RouteContext, store declaration: StoreDeclaration,
        pathClient: ClientWithStoreCredentials?
    ) -> NotificationRequest {
        let clients = clients
        return NotificationRequest(
            body: request.body, headers: request.headers, query: context.query,
            owner: { app in try await clients.owner(ofApp: app, store: declaration) },
            ownerBySetting: { name, value in
                try await clients.owner(withSetting: name, value: value, store: declaration)
            },
            pathClient: pathClient,
            knowsPlayer: { player in
                guard let clientID = pathClient?.client.clientID else { return false }
                return try await clients.knows(player: player, clientID: clientID)
            })
    }

    static func refusal(_ rejection: NotificationRejection) -> RouteResponse {
        switch rejection.kind {
        case .malformed: NativeAPI.error(.invalidField, rejection.message)
        case .forged: NativeAPI.error(.unauthorized, "\(rejection.reason): \(rejection.message)")
        case .retryable, .ignored: Self.unavailable(rejection.message)
        }
    }

    static let unstorableRejection = NotificationRejection(
        .malformed, reason: "UNSTORABLE_VALUE",
        message: "the notification holds a value that cannot be kept or looked up (a NUL character or invalid text)")

    static func unstorable(_ store: StoreID, context: RouteContext) -> RouteResponse {
        context.logger.warning("store notification refused", ["store": store.rawValue, "reason": "UNSTORABLE_VALUE"])
        return NativeAPI.error(.invalidField, unstorableRejection.message)
    }

    static func response(_ answer: NotificationAnswer) -> RouteResponse {
        RouteResponse(status: answer.status, contentType: answer.contentType ?? "application/json", body: answer.body)
    }

    /// 503 makes the store send it again later.
    static func unavailable(_ message: String) -> RouteResponse {
        .json(["error": ErrorCode.verifierError.rawValue, "message": message], status: 503)
    }
}
