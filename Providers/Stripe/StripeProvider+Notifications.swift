import Foundation
public import ReceiptCore

extension StripeProvider {
    /// One webhook request: an event to the client's own endpoint. Its `Stripe-Signature` is
    /// checked with the endpoint's secret (both while one is rolled) before anything in the body
    /// is read; a bad or stale signature is refused without a call to Stripe. A genuine event is
    /// then read back (`outcome(of:)`) and becomes one notification per purchase it concerns.
    public func receiveNotifications(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> [StoreNotification] {
        guard let owner = request.pathClient else {
            throw NotificationRejection(
                .malformed, reason: "CLIENT_REQUIRED",
                message: "Stripe posts to /v1/notifications/stripe/{client_id}, the client's own endpoint")
        }
        let secrets = StripeSignature.secrets(owner.credentials[Setting.webhookSecret])
        guard !secrets.isEmpty else {
            logger.warning(
                "a Stripe webhook cannot be checked: the client has no webhook secret (--stripe-webhook-secret)",
                ["client.id": owner.client.clientID])
            throw NotificationRejection(
                .retryable, reason: "STRIPE_NOT_CONFIGURED", message: "the webhook cannot be checked now")
        }
        try checkSignature(request, secrets: secrets)
        guard let event = StripeObject(parsing: request.body), event.kind == "event",
            event.id?.hasPrefix("evt_") == true, event.string("type") != nil
        else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD", message: "the body is not a Stripe event (object \"event\")")
        }
        let access: StripeAccess
        do { access = try StripeAccess.of(owner) } catch {
            logger.warning(
                "a Stripe webhook cannot be read back for this client",
                ["client.id": owner.client.clientID, "problem": error.message])
            throw NotificationRejection(.retryable, reason: error.reason, message: "the event cannot be read back now")
        }
        let outcome: EventOutcome
        do { outcome = try await self.outcome(of: event, access: access, deadline: nil) } catch let error
            as StoreAPIError
        {
            throw rejection(error, client: owner.client.clientID)
        }
        switch outcome {
        case .nothing(let reason, let message):
            throw NotificationRejection(.ignored, reason: reason, message: message)
        case .record(let notifications):
            return notifications.map {
                var owned = $0
                owned.clientID = owner.client.clientID
                return owned
            }
        }
    }

    /// Every webhook carries an event; `receiveNotifications` is the one that reads it.
    public func receiveNotification(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> StoreNotification {
        let all = try await receiveNotifications(request, registered: registered)
        guard let first = all.first else {
            throw NotificationRejection(.ignored, reason: "NOTHING_BOUGHT", message: "the event concerns no purchase")
        }
        return first
    }

    /// Stripe reads only the status: 2xx stops its retries, anything else is retried for up to
    /// three days. A signature that does not hold is answered 400 (Stripe's own advice), so the
    /// endpoint's log in the Dashboard shows the refusal; the rest as the core answers.
    public func answer(to outcome: NotificationOutcome) -> NotificationAnswer? {
        guard case .refused(let rejection) = outcome, rejection.kind == .forged || rejection.kind == .malformed
        else { return nil }
        let body = RefusalBody(error: .init(code: rejection.reason, message: rejection.message))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return NotificationAnswer(
            status: 400, body: (try? encoder.encode(body)) ?? Data(), contentType: "application/json")
    }

    private struct RefusalBody: Encodable {
        struct Detail: Encodable {
            let code: String
            let message: String
        }
        let error: Detail
    }

    private func checkSignature(_ request: NotificationRequest, secrets: [String]) throws(NotificationRejection) {
        do throws(StripeSignature.Refusal) {
            let signature = try StripeSignature(header: request.headers["stripe-signature"])
            try signature.check(
                body: request.body, secrets: secrets, now: now(), tolerance: configuration.signatureTolerance)
        } catch {
            switch error {
            case .unreadable:
                throw NotificationRejection(
                    .malformed, reason: "INVALID_SIGNATURE_HEADER",
                    message: "the Stripe-Signature header is missing or has no timestamp and v1 signature")
            case .mismatch:
                throw NotificationRejection(
                    .forged, reason: "INVALID_SIGNATURE",
                    message: "no v1 signature matches the endpoint's webhook secret")
            case .stale:
                throw NotificationRejection(
                    .forged, reason: "STALE_SIGNATURE",
                    message:
                        "the signature's timestamp is more than \(Int(configuration.signatureTolerance)) s from now")
            }
        }
    }

    /// Stripe's trouble reading an event back, as the webhook's answer: an object Stripe does not
    /// have for the client's key (another mode's event, a deleted object) is nothing to record;
    /// anything else is asked again when Stripe sends the event again.
    private func rejection(_ error: StoreAPIError, client: String) -> NotificationRejection {
        if error.kind == .notFound || error.kind == .refused {
            return NotificationRejection(.ignored, reason: "OBJECT_NOT_FOUND", message: error.message)
        }
        logger.warning(
            "a Stripe event could not be read back", ["client.id": client, "problem": error.message])
        return NotificationRejection(
            .retryable, reason: error.reason, message: "the event's object could not be read from Stripe now")
    }
}
