import Foundation
import ReceiptCore

/// What an operator can see and do about outbox deliveries over HTTP (`GET /admin/webhooks`,
/// `POST /admin/webhooks/{event_id}/redeliver`), behind `RECEIPTGATE_ADMIN_TOKEN`. The CLI
/// (`receiptgate webhooks`) calls the same repository.
struct WebhookAdmin: Sendable {
    let outbox: OutboxRepository

    var routes: [Route] {
        [
            Route("GET", "/admin/webhooks", authentication: .admin) { _, context in
                do {
                    return .json(["events": try await outbox.list(failedOnly: context.query["failed"] == "true")])
                } catch {
                    return NativeAPI.error(.verifierError, "the outbox could not be read")
                }
            },
            Route("POST", "/admin/webhooks/{event_id}/redeliver", authentication: .admin) { _, context in
                let eventID = context.pathParameters["event_id"] ?? ""
                do {
                    guard try await outbox.redeliver(eventID: eventID) else {
                        return NativeAPI.error(.notFound, "no webhook event \(eventID)")
                    }
                    return .json(["status": "queued", "event_id": eventID.lowercased()])
                } catch {
                    return NativeAPI.error(.verifierError, "the outbox could not be updated")
                }
            },
        ]
    }
}
