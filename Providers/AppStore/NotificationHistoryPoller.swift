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
    /// Pages per app and environment per run (20 records each), so a backlog cannot hold the lease.
    static let maxPages = 50
    /// Each window starts a little before the previous one ended: Apple may list a notification a
    /// little after its `signedDate`; what is read twice is deduplicated.
    static let overlapMillis: Int64 = 10 * 60 * 1000
    /// A first run reads the last day: the history of a service that has been receiving pushes.
    static let firstLookbackMillis: Int64 = 24 * 3600 * 1000

    package init(provider: AppStoreProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    /// Where one app's history stands in one environment: the window being read, and the page.
    struct Cursor: Codable {
        var since: Int64
        var until: Int64?
        var paginationToken: String?
    }

    /// Apple keeps 180 days of production history and 30 of sandbox.
    static func retentionMillis(_ environment: AppStoreEnvironment) -> Int64 {
        (environment == .production ? 180 : 30) * 24 * 3600 * 1000
    }

    package func poll(owners: [ClientWithStoreCredentials], run: any PollRun,
                     record: @Sendable ([StoreNotification]) async throws -> Void) async throws {
        var seen: Set<String> = [], failures: [String] = [], retryAfter: Duration?
        for owner in owners {
            let environments = owner.client.environments.map(AppStoreProvider.appStoreEnvironment).sorted { $0.rawValue < $1.rawValue }
            for bundleID in owner.client.appIdentifiers(AppStoreProvider.bundleIDKind) {
                for environment in environments where seen.insert("\(environment.rawValue):\(bundleID)").inserted {
                    do {
                        try await poll(bundleID: bundleID, environment: environment, run: run, record: record)
                    } catch let error as AppStoreAPIError {
                        // One app's trouble does not stop the others; the run reports it at the end.
                        failures.append("\(bundleID) (\(environment.rawValue)): \(Self.explain(error))")
                        if let wait = error.retryAfter { retryAfter = max(retryAfter ?? wait, wait) }
                    }
                }
            }
        }
        if !failures.isEmpty { throw HistoryUnavailable(problems: failures, retryAfter: retryAfter) }
    }

    func poll(bundleID: String, environment: AppStoreEnvironment, run: any PollRun,
              record: @Sendable ([StoreNotification]) async throws -> Void) async throws {
        guard let configuration = provider.configuration, let api = configuration.serverAPIClient(bundleID: bundleID, http: provider.http) else { return }
        let cursorKey = "\(pollName):\(environment.rawValue):\(bundleID)"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        // Apple refuses a start beyond its retention; an hour's margin covers clocks that disagree.
        let oldest = now - Self.retentionMillis(environment) + 3_600_000
        // A by-hand run starts where the operator said, with cursors of its own (empty at first).
        let start = run.since.map { Int64($0.timeIntervalSince1970 * 1000) } ?? now - Self.firstLookbackMillis
        var cursor = try await run.cursor(cursorKey).flatMap { try? JSONDecoder().decode(Cursor.self, from: Data($0.utf8)) }
            ?? Cursor(since: start)
        if cursor.since < oldest || (cursor.until ?? now) <= cursor.since {
            // Older than Apple keeps (polling was off, or the key failed for weeks), or a window
            // that no longer makes sense: a fresh window from the oldest Apple still has, no token.
            cursor = Cursor(since: max(cursor.since, oldest))
        }
        let until = cursor.until ?? now
        cursor.until = until
        let expectations = AppStoreExpectations(bundleIDs: [bundleID], environments: [environment])
        for _ in 0..<Self.maxPages {
            let page = try await readPage(api, cursor: cursor, until: until, environment: environment, saving: cursorKey, in: run)
            run.pageRead()
            var found: [StoreNotification] = []
            for item in page.notificationHistory ?? [] {
                guard let signed = item.signedPayload else { continue }
                do {
                    var notification = try await provider.notification(signedPayload: signed, expecting: expectations)
                    notification.rawBody = try? JSONEncoder().encode(["signedPayload": signed])  // the push's own body
                    if notification.event.purchase?.dateOutOfRange == nil { found.append(notification) }
                } catch let error as AppStoreVerificationError where !error.isRetryable {
                    continue  // not Apple's, or not for this app: what the push route refuses too
                } catch let error as AppStoreVerificationError {
                    // The revocation check could not be made now: this app waits for the next run.
                    throw AppStoreAPIError(status: nil, errorCode: nil, errorMessage: nil, transport: "revocation check unavailable: \(error.message)")
                }
            }
            try await record(found)
            if page.hasMore == true, let next = page.paginationToken, !next.isEmpty {
                cursor.paginationToken = next
                try await run.setCursor(cursorKey, to: try Self.encode(cursor))
            } else {
                try await run.setCursor(cursorKey, to: try Self.encode(Cursor(since: max(until - Self.overlapMillis, oldest))))
                return
            }
        }
    }

    /// One page of the window; a saved page's token Apple no longer takes (a refused request,
    /// not the key) is dropped, so the next run reads the same window from its first page (what
    /// repeats is deduplicated) instead of failing on that token for ever.
    private func readPage(_ api: AppStoreServerAPIClient, cursor: Cursor, until: Int64, environment: AppStoreEnvironment,
                          saving cursorKey: String, in cursors: any PollCursorStore) async throws -> AppStoreServerAPIClient.NotificationHistoryPage {
        do {
            return try await api.notificationHistoryPage(from: Self.date(cursor.since), to: Self.date(until),
                                                         paginationToken: cursor.paginationToken, environment: environment)
        } catch {
            if cursor.paginationToken != nil, !error.isRetryable, error.status != 401, error.status != 403 {
                try await cursors.setCursor(cursorKey, to: try Self.encode(Cursor(since: cursor.since)))
            }
            throw error
        }
    }

    static func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

    static func encode(_ cursor: Cursor) throws -> String { String(decoding: try JSONEncoder().encode(cursor), as: UTF8.self) }

    /// What an operator should do about an API failure: a refused key names its settings; a rate
    /// limit or a server error waits for the next run, which resumes from the saved cursor.
    static func explain(_ error: AppStoreAPIError) -> String {
        switch error.status {
        case 401?, 403?:
            "the App Store Server API refused the key: check RECEIPTGATE_APPSTORE_API_KEY_ID, _ISSUER_ID and _KEY_PATH (\(error))"
        case 429?:
            "rate limited by Apple; the next run resumes where this one stopped (\(error))"
        default:
            "\(error); the next run resumes where this one stopped"
        }
    }

    struct HistoryUnavailable: StoreAskedToWait, CustomStringConvertible {
        let problems: [String]
        let retryAfter: Duration?
        var description: String { "notification history not read for " + problems.joined(separator: "; ") }
    }
}
