import Foundation
package import ReceiptCore

/// Reconciles every client's Stripe events: its event list (`GET /v1/events`, which Stripe keeps
/// for 30 days) read with the client's own key from where the last run stopped, page by page
/// (`starting_after`, `has_more`), each event read back and recorded as its webhook would have
/// been (under the same ids, so one already recorded is applied once). A webhook lost on the way
/// is applied by the next run.
package struct StripeEventPoller: StorePolling {
    package let pollName = "stripe.events"
    package let interval: Duration
    let provider: StripeProvider

    package init(provider: StripeProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    package func poll(
        owners: [ClientWithStoreCredentials], run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let (targets, known) = PollTargets.access(of: owners, StripeAccess.of)
        try await PollTargets.each(targets, subject: "Stripe events", known: known) { target in
            try await poll(owner: target.owner, access: target.access, run: run, record: record)
        } problem: { target, error in
            guard let error = error as? StoreAPIError else { return nil }
            provider.logger.warning(
                "Stripe events could not be read",
                ["client.id": target.owner.client.clientID, "problem": error.message])
            return PollTargets.Problem(
                "client \(target.owner.client.clientID): \(error.operatorHelp)", retryAfter: error.retryAfter)
        }
    }

    func poll(
        owner: ClientWithStoreCredentials, access: StripeAccess, run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let now = Int64(provider.now().timeIntervalSince1970 * 1000)
        let window = WindowedPoll.Window(
            oldest: now - Int64(provider.configuration.eventLookback * 1000), now: now)
        let caller = StripeAPI.Caller(apiKey: access.apiKey)
        let clientID = owner.client.clientID
        try await WindowedPoll.read(
            "\(pollName):\(clientID)", window: window, run: run,
            list: { cursor, until in
                var query: [(String, String)] = [
                    ("limit", String(provider.configuration.eventPageSize)),
                    ("created[gte]", String(cursor.since / 1000)), ("created[lt]", String((until + 999) / 1000)),
                ]
                query += StripeProvider.followedTypes.map { ("types[]", $0) }
                if let after = cursor.pageToken { query.append(("starting_after", after)) }
                return try await provider.api.get("/v1/events", query, as: caller)
            },
            // A `starting_after` Stripe no longer has (the event aged out) is refused as a bad request.
            refusesToken: { error in
                guard let error = error as? StoreAPIError else { return false }
                return error.kind == .refused || error.kind == .notFound
            },
            page: { listed in
                var found: [StoreNotification] = []
                for event in listed.data {
                    let outcome: StripeProvider.EventOutcome
                    do { outcome = try await provider.outcome(of: event, access: access, deadline: nil) } catch let
                        error
                        as StoreAPIError where error.kind == .notFound || error.kind == .refused
                    {
                        // An object Stripe no longer has for this key: nothing to apply, and no
                        // reason to stop the list at it.
                        continue
                    }
                    switch outcome {
                    case .record(let notifications):
                        found += notifications.map {
                            var owned = $0
                            owned.clientID = clientID
                            return owned
                        }
                    case .nothing:
                        continue
                    }
                }
                return WindowedPoll.Page(
                    notifications: found, listed: listed.data.count,
                    nextToken: listed.hasMore ? listed.data.last?.id : nil)
            }, record: record)
    }
}
