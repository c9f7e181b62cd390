package import Foundation

/// The events Stripe keeps (listed by `GET /v1/events`) and sends to a webhook endpoint, signed.
extension FakeStripe {
    /// An event sent to an endpoint: its id, its body as sent, and its `Stripe-Signature`.
    package struct Webhook: Sendable {
        package let id: String
        package let body: Data
        package let signature: String

        package init(id: String, body: Data, signature: String) {
            self.id = id
            self.body = body
            self.signature = signature
        }

        package var headers: [String: String] { ["stripe-signature": signature, "content-type": "application/json"] }
    }

    /// Records an event about `objectID` (its snapshot as it is now, as Stripe sends it) in the
    /// list; returns its id.
    @discardableResult
    package func event(_ type: String, about objectID: String, account: String? = nil, created: Int? = nil) -> String {
        let id = newID("evt")
        let snapshot = object(objectID) ?? ["id": objectID]
        var event: [String: Any] = [
            "id": id, "object": "event", "api_version": "2025-03-31.basil", "created": created ?? unixNow,
            "data": ["object": snapshot], "livemode": snapshot["livemode"] ?? false, "pending_webhooks": 1,
            "request": ["id": NSNull(), "idempotency_key": NSNull()], "type": type,
        ]
        if let account { event["account"] = account }
        put(event)
        state.events.update { $0.append(id) }
        return id
    }

    /// An event as the endpoint receives it, signed with `secret` at `timestamp` (now when nil).
    package func webhook(
        _ type: String, about objectID: String, account: String? = nil, secret: String = FakeStripe.webhookSecret,
        timestamp: Int? = nil
    ) throws -> Webhook {
        let id = event(type, about: objectID, account: account)
        return try signed(id, secret: secret, timestamp: timestamp)
    }

    /// A recorded event's body, signed again (Stripe sends an event again until it is answered 2xx).
    package func signed(
        _ eventID: String, secret: String = FakeStripe.webhookSecret, timestamp: Int? = nil
    ) throws
        -> Webhook
    {
        let body = state.objects.get()[eventID] ?? Data()
        return Webhook(
            id: eventID, body: body,
            signature: try Self.signatureHeader(body: body, secret: secret, timestamp: timestamp ?? unixNow))
    }
}
