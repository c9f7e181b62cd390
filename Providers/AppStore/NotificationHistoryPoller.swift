import Foundation
package import ReceiptCore

/// Reads Apple's notification history (Get Notification History) back on a schedule, for every
/// registered bundle id in every environment its client accepts, so a notification whose push
/// never arrived (the service down, a wrong URL, Apple's retries run out) still reaches the
/// ledger. Each `signedPayload` takes the push's path (`AppStoreProvider.notification`): proven,
/// then recorded under its `notificationUUID`, so one found both ways is applied once.
///
/// The runner (`StorePollRunner`) holds the cluster-wide lease, so one process reads a window at a
/// time; the cursor (window and page) lives in Postgres and survives restarts.
package struct NotificationHistoryPoller: StorePolling {
    package let pollName = "app_store.notification_history"
    package let interval: Duration
    let provider: AppStoreProvider
    /// A first run reads the last day: the history of a service that has been receiving pushes.
    static let firstLookbackMillis: Int64 = 24 * 3600 * 1000

    package init(provider: AppStoreProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    /// Apple keeps 180 days of production history and 30 of sandbox.
    static func retentionMillis(_ environment: AppStoreEnvironment) -> Int64 {
        (environment == .production ? 180 : 30) * 24 * 3600 * 1000
    }

    package func poll(
        owners: [ClientWithStoreCredentials], run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        var seen: Set<String> = []
        let targets = owners.flatMap { owner in
            let environments = owner.client.environments.map(AppStoreProvider.appStoreEnvironment).sorted {
                $0.rawValue < $1.rawValue
            }
            return owner.client.appIdentifiers(AppStoreProvider.bundleIDKind).flatMap { bundleID in
                environments.filter { seen.insert("\($0.rawValue):\(bundleID)").inserted }.map {
                    (bundleID: bundleID, environment: $0)
                }
            }
        }
        try await PollTargets.each(targets, subject: "notification history") { target in
            try await poll(bundleID: target.bundleID, environment: target.environment, run: run, record: record)
        } problem: { target, error in
            guard let error = error as? StoreAPIError else { return nil }
            return PollTargets.Problem(
                "\(target.bundleID) (\(target.environment.rawValue)): \(error.operatorHelp)",
                retryAfter: error.retryAfter)
        }
    }

    func poll(
        bundleID: String, environment: AppStoreEnvironment, run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        guard let configuration = provider.configuration,
            let api = configuration.serverAPIClient(bundleID: bundleID, http: provider.http, now: provider.now)
        else { return }
        let now = Int64(provider.now().timeIntervalSince1970 * 1000)
        // Apple refuses a start beyond its retention; an hour's margin covers clocks that disagree.
        let window = WindowedPoll.Window(
            oldest: now - Self.retentionMillis(environment) + 3_600_000, now: now,
            firstStart: now - Self.firstLookbackMillis)
        let expectations = AppStoreExpectations(bundleIDs: [bundleID], environments: [environment])
        try await WindowedPoll.read(
            "\(pollName):\(environment.rawValue):\(bundleID)", window: window, run: run,
            list: { cursor, until in
                try await api.notificationHistoryPage(
                    from: Self.date(cursor.since), to: Self.date(until),
                    paginationToken: cursor.pageToken, environment: environment)
            },
            refusesToken: { error in
                // A refused request (or an answer not Apple's), not the key and not Apple's trouble.
                guard let error = error as? StoreAPIError else { return false }
                return [.refused, .notFound, .malformedAnswer].contains(error.kind)
            },
            page: { page in
                var found: [StoreNotification] = []
                for item in page.notificationHistory ?? [] {
                    guard let signed = item.signedPayload else { continue }
                    do {
                        var notification = try await provider.notification(
                            signedPayload: signed, expecting: expectations)
                        // the push's own body
                        notification.rawBody = try? JSONEncoder().encode(["signedPayload": signed])
                        if notification.event.purchase?.dateOutOfRange == nil { found.append(notification) }
                    } catch let error as AppStoreVerificationError where !error.isRetryable {
                        continue  // not Apple's, or not for this app: what the push route refuses too
                    } catch let error as AppStoreVerificationError {
                        // The revocation check could not be made now: this app waits for the next run.
                        throw AppleAPIErrors.unreachable("revocation check unavailable: \(error.message)")
                    }
                }
                return WindowedPoll.Page(
                    notifications: found, listed: page.notificationHistory?.count ?? 0,
                    nextToken: page.hasMore == true ? page.paginationToken : nil)
            }, record: record)
    }

    static func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }
}
