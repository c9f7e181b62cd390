import Foundation
import ReceiptCore

/// What stores have pushed, as an operator reads it (`GET /admin/notifications`), behind
/// `RECEIPTGATE_ADMIN_TOKEN`: a store's subscription handshake hands the operator a token to
/// confirm, and this is where it can be found again. The CLI (`receiptgate notifications list`)
/// calls the same repository.
struct NotificationAdmin: Sendable {
    let notifications: NotificationRepository

    var routes: [Route] {
        [
            Route("GET", "/admin/notifications", authentication: .admin) { _, context in
                do {
                    let listed = try await notifications.list(
                        store: Self.filter(context.query["store"]), type: Self.filter(context.query["type"]))
                    return .json(["notifications": listed])
                } catch {
                    return NativeAPI.error(.verifierError, "the notifications could not be read")
                }
            }
        ]
    }

    /// An empty query value filters nothing, as if it were absent.
    static func filter(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }
}
