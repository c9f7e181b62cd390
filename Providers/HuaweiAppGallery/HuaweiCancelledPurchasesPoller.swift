import Foundation
package import ReceiptCore

/// Polls Huawei's cancelled or refunded purchases (`cancelledList`, one-time products and
/// subscriptions) for every registered Huawei app, with its owning client's app id and secret,
/// page by page, remembering per client, app and site where it stopped. A listed record is a
/// hint: the purchase is read again from Huawei (signature checked), and only a revocation that
/// signed answer shows becomes a refund, recorded like a notification on `cancelled:<order id>`,
/// so the same refund listed twice (the overlap, a by-hand run) is applied once.
package struct HuaweiCancelledPurchasesPoller: StorePolling {
    package let pollName = "huawei_appgallery.cancelled_purchases"
    package let interval: Duration
    let provider: HuaweiAppGalleryProvider
    /// Pages per app and site per run, so one huge backlog cannot hold the lease forever.
    static let maxPages = 50
    /// Records per page: Huawei's maximum.
    static let maxRows = 1000
    /// Re-read a little of the previous window: Huawei may list a refund late; duplicates are free.
    static let overlapMillis: Int64 = 10 * 60 * 1000

    package init(provider: HuaweiAppGalleryProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    /// Where one app's poll stands at one site: the window being read, and the page within it.
    struct Cursor: Codable {
        var since: Int64
        var until: Int64?
        var continuationToken: String?
    }

    package func poll(owners: [ClientWithStoreCredentials], run: any PollRun,
                     record: @Sendable ([StoreNotification]) async throws -> Void) async throws {
        var seen: Set<String> = [], failures: [String] = [], retryAfter: Duration?
        for owner in owners {
            let access: HuaweiAppGalleryProvider.Access
            do { access = try HuaweiAppGalleryProvider.access(client: owner.client, credentials: owner.credentials) } catch {
                failures.append("client \(owner.client.clientID): \(error.message)")
                continue
            }
            for site in sites() where seen.insert("\(access.app.id):\(site.rawValue)").inserted {
                do {
                    try await poll(owner: owner, access: access, site: site, run: run, record: record)
                } catch let error as HuaweiAPIError {
                    // One app's trouble (a refused secret, a rate limit) does not stop the others;
                    // the run reports it at the end, and the next resumes from the saved cursor.
                    provider.logger.warning("Huawei cancelled purchases could not be polled",
                                            ["client.id": owner.client.clientID, "site": site.rawValue, "problem": error.message])
                    failures.append("\(access.app) at the \(site.rawValue) site: \(Self.explain(error))")
                    if let wait = error.retryAfter { retryAfter = max(retryAfter ?? wait, wait) }
                }
            }
        }
        if !failures.isEmpty { throw CancelledPurchasesUnavailable(problems: failures, retryAfter: retryAfter) }
    }

    /// The configured sites, each root once: with one base for every site, one site is read.
    func sites() -> [HuaweiSite] {
        var roots: Set<String> = []
        return provider.configuration.cancelledPurchasesSites.filter { roots.insert(provider.configuration.roots(for: $0).orders).inserted }
    }

    func poll(owner: ClientWithStoreCredentials, access: HuaweiAppGalleryProvider.Access, site: HuaweiSite, run: any PollRun,
              record: @Sendable ([StoreNotification]) async throws -> Void) async throws {
        let cursorKey = "\(pollName):\(owner.client.clientID):\(access.app.id):\(site.rawValue)"
        let nowMillis = Int64(provider.now().timeIntervalSince1970 * 1000)
        let oldest = nowMillis - Int64(provider.configuration.cancelledPurchasesLookback * 1000)
        // A by-hand run starts where the operator said, with cursors of its own (empty at first).
        let start = run.since.map { Int64($0.timeIntervalSince1970 * 1000) } ?? oldest
        var cursor = try await run.cursor(cursorKey).flatMap { try? JSONDecoder().decode(Cursor.self, from: Data($0.utf8)) }
            ?? Cursor(since: start)
        if let saved = cursor.until, saved <= oldest {
            // A window left unfinished so long ago that all of it is older than what Huawei keeps:
            // its page token is worthless; read what Huawei still has, from the oldest it keeps.
            cursor = Cursor(since: oldest)
        }
        cursor.since = max(cursor.since, oldest)  // older than Huawei's window: from the oldest it keeps
        let until = cursor.until ?? nowMillis
        guard until > cursor.since else { return }  // a start in the future: nothing to read yet
        cursor.until = until
        let apps = Set(owner.client.appIdentifiers(HuaweiAppGalleryProvider.packageNameKind))
        for _ in 0..<Self.maxPages {
            let page = try await readPage(cursor: cursor, until: until, site: site, access: access, saving: cursorKey, in: run)
            run.pageRead()
            var found: [StoreNotification] = []
            for listed in page.purchases {
                if let notification = try await provider.cancelledPurchase(listed, access: access, apps: apps,
                                                                           environments: owner.client.environments, site: site) {
                    found.append(notification)
                }
            }
            try await record(found)
            if let next = page.continuationToken, next != cursor.continuationToken, !page.purchases.isEmpty {
                cursor.continuationToken = next
                try await run.setCursor(cursorKey, to: try Self.encode(cursor))
            } else {
                if page.continuationToken != nil {
                    // The same token again, or a token with nothing on its page: following it would
                    // read the same nothing until the page limit, run after run. The window is
                    // taken as read.
                    provider.logger.warning("Huawei's cancelled list gave a page token that leads nowhere; the window is taken as read",
                                            ["client.id": owner.client.clientID, "site": site.rawValue,
                                             "repeated": String(page.continuationToken == cursor.continuationToken)])
                }
                try await run.setCursor(cursorKey, to: try Self.encode(Cursor(since: max(until - Self.overlapMillis, oldest))))
                return
            }
        }
    }

    /// One page of the window; a saved continuation token Huawei no longer takes (a refused
    /// request, not the credentials) is dropped, so the next run reads the window again from its
    /// first page (what repeats is deduplicated) instead of failing on that token for ever.
    private func readPage(cursor: Cursor, until: Int64, site: HuaweiSite, access: HuaweiAppGalleryProvider.Access,
                          saving cursorKey: String, in cursors: any PollCursorStore) async throws -> HuaweiCancelledPurchasePage {
        do {
            return try await provider.api.cancelledList(startAt: cursor.since, endAt: until, maxRows: Self.maxRows, includeSubscriptions: true,
                                                        continuationToken: cursor.continuationToken, site: site, app: access.app)
        } catch let error as HuaweiAPIError where cursor.continuationToken != nil && error.kind == .rejected {
            try await cursors.setCursor(cursorKey, to: try Self.encode(Cursor(since: cursor.since)))
            throw error
        }
    }

    /// What an operator should do about a failure: refused credentials name their settings; a
    /// rate limit or an outage waits for the next run, which resumes where this one stopped.
    static func explain(_ error: HuaweiAPIError) -> String {
        switch error.kind {
        case .permission, .notConfigured:
            "Huawei refused the client's credentials: check its --huawei-app-id and --huawei-app-secret (\(error))"
        case .unavailable where error.status == 429:
            "rate limited by Huawei; the next run resumes where this one stopped (\(error))"
        default:
            "\(error); the next run resumes where this one stopped"
        }
    }

    struct CancelledPurchasesUnavailable: StoreAskedToWait, CustomStringConvertible {
        let problems: [String]
        let retryAfter: Duration?
        var description: String { "Huawei cancelled purchases not read for " + problems.joined(separator: "; ") }
    }

    static func encode(_ cursor: Cursor) throws -> String { String(decoding: try JSONEncoder().encode(cursor), as: UTF8.self) }
}
