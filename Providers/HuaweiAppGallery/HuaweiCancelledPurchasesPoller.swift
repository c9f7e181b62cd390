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
    /// Records per page: Huawei's maximum.
    static let maxRows = 1000

    package init(provider: HuaweiAppGalleryProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    package func poll(
        owners: [ClientWithStoreCredentials], run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        var seen: Set<String> = [], known: [PollTargets.Problem] = []
        var targets: [(owner: ClientWithStoreCredentials, access: HuaweiAppGalleryProvider.Access, site: HuaweiSite)] =
            []
        for owner in owners {
            let access: HuaweiAppGalleryProvider.Access
            do {
                access = try HuaweiAppGalleryProvider.access(client: owner.client, credentials: owner.credentials)
            } catch {
                known.append(PollTargets.Problem("client \(owner.client.clientID): \(error.message)"))
                continue
            }
            targets += sites().filter { seen.insert("\(access.app.id):\($0.rawValue)").inserted }.map {
                (owner, access, $0)
            }
        }
        try await PollTargets.each(targets, subject: "Huawei cancelled purchases", known: known) { target in
            try await poll(owner: target.owner, access: target.access, site: target.site, run: run, record: record)
        } problem: { target, error in
            guard let error = error as? StoreAPIError else { return nil }
            provider.logger.warning(
                "Huawei cancelled purchases could not be polled",
                ["client.id": target.owner.client.clientID, "site": target.site.rawValue, "problem": error.message])
            return PollTargets.Problem(
                "\(target.access.app) at the \(target.site.rawValue) site: \(error.operatorHelp)",
                retryAfter: error.retryAfter)
        }
    }

    /// The configured sites, each root once: with one base for every site, one site is read.
    func sites() -> [HuaweiSite] {
        var roots: Set<String> = []
        return provider.configuration.cancelledPurchasesSites.filter {
            roots.insert(provider.configuration.roots(for: $0).orders).inserted
        }
    }

    func poll(
        owner: ClientWithStoreCredentials, access: HuaweiAppGalleryProvider.Access, site: HuaweiSite, run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let now = Int64(provider.now().timeIntervalSince1970 * 1000)
        var window = WindowedPoll.Window(
            oldest: now - Int64(provider.configuration.cancelledPurchasesLookback * 1000), now: now)
        // Huawei has handed out tokens for empty pages: followed, they read the same nothing.
        window.emptyPageEndsWindow = true
        let apps = Set(owner.client.appIdentifiers(HuaweiAppGalleryProvider.packageNameKind))
        try await WindowedPoll.read(
            "\(pollName):\(owner.client.clientID):\(access.app.id):\(site.rawValue)", window: window, run: run,
            list: { cursor, until in
                try await provider.api.cancelledList(
                    startAt: cursor.since, endAt: until, maxRows: Self.maxRows, includeSubscriptions: true,
                    continuationToken: cursor.pageToken, site: site, app: access.app)
            },
            refusesToken: { ($0 as? StoreAPIError)?.kind == .refused },
            page: { page in
                var found: [StoreNotification] = []
                for listed in page.purchases {
                    if let notification = try await provider.cancelledPurchase(
                        listed, access: access, apps: apps,
                        environments: owner.client.environments, site: site)
                    {
                        found.append(notification)
                    }
                }
                return WindowedPoll.Page(
                    notifications: found, listed: page.purchases.count, nextToken: page.continuationToken)
            }, record: record,
            deadToken: { dead in
                provider.logger.warning(
                    "Huawei's cancelled list gave a page token that leads nowhere; the window is taken as read",
                    ["client.id": owner.client.clientID, "site": site.rawValue, "repeated": String(dead == .repeated)])
            })
    }
}
