import Foundation
package import ReceiptCore

/// Polls `voidedpurchases.list` for every registered package (with the owning client's key, or
/// the service's), page by page, remembering per package where it stopped. Each voided order
/// becomes a refund, recorded like a notification on `voided:<order id>` (the id the RTDN path
/// uses too), so the same refund learned twice is applied once.
package struct VoidedPurchasePoller: StorePolling {
    package let pollName = "google_play.voided_purchases"
    package let interval: Duration
    let provider: GooglePlayProvider

    package init(provider: GooglePlayProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    package func poll(
        owners: [ClientWithStoreCredentials], run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        var seen: Set<String> = []
        let targets = owners.flatMap { owner in
            owner.client.appIdentifiers(GooglePlayProvider.packageNameKind).filter { seen.insert($0).inserted }.map {
                (package: $0, owner: owner)
            }
        }
        try await PollTargets.each(targets, subject: "voided purchases") { target in
            try await poll(package: target.package, owner: target.owner, run: run, record: record)
        } problem: { target, error in
            guard let error = error as? StoreAPIError else { return nil }
            provider.logger.warning(
                "voided purchases could not be polled", ["package": target.package, "problem": error.message])
            return PollTargets.Problem("\(target.package): \(error.operatorHelp)", retryAfter: error.retryAfter)
        }
    }

    func poll(
        package: String, owner: ClientWithStoreCredentials, run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let key = try provider.serviceAccountKey(owner.credentials)
        let now = Int64(provider.now().timeIntervalSince1970 * 1000)
        // Google refuses a start older than its lookback (30 days).
        let window = WindowedPoll.Window(
            oldest: now - Int64(provider.configuration.voidedPurchasesLookback * 1000), now: now)
        try await WindowedPoll.read(
            "\(pollName):\(package)", window: window, run: run,
            list: { cursor, until in
                try await provider.api.voidedPurchases(
                    package: package, startMillis: cursor.since, endMillis: until,
                    pageToken: cursor.pageToken, key: key)
            },
            refusesToken: { ($0 as? StoreAPIError)?.kind == .refused },
            page: { page in
                var found: [StoreNotification] = []
                // Each void's order as Google keeps it, in one call for the page: how much went back.
                let orders = try await provider.orders(
                    (page.voidedPurchases ?? []).compactMap(\.orderId), package: package, key: key)
                for voided in page.voidedPurchases ?? [] {
                    if let notification = try await notification(
                        voided, order: voided.orderId.flatMap { orders[$0] }, package: package, owner: owner, key: key)
                    {
                        found.append(notification)
                    }
                }
                return WindowedPoll.Page(
                    notifications: found, listed: page.voidedPurchases?.count ?? 0,
                    nextToken: page.tokenPagination?.nextPageToken)
            }, record: record)
    }

    /// One void as a refund. Its order (`orders.batchGet`), when Google returns it for the void's
    /// token, says what the void's own fields leave out: a partial refund, and when it happened.
    private func notification(
        _ voided: VoidedPurchaseList.VoidedPurchase, order: BatchGetOrdersResponse.Order?, package: String,
        owner: ClientWithStoreCredentials, key: ServiceAccountKey
    ) async throws -> StoreNotification? {
        guard let token = voided.purchaseToken, let orderID = voided.orderId else { return nil }
        var fetched: VerifiedPurchase?
        do {
            fetched = try await provider.fetch(
                GooglePlayEvidence(purchaseToken: token), package: package, key: key,
                consume: owner.client.setting(GooglePlayProvider.Setting.consume) == "on",
                client: owner.client.clientID, lenient: true)
        } catch let error as StoreAPIError where error.kind == .notFound || error.kind == .refused {
            fetched = nil  // Google no longer has the purchase: the void alone says enough.
        }
        let confirmed = order.flatMap { $0.purchaseToken == token ? $0 : nil }
        let orderState = confirmed.map { GooglePlayProvider.OrderState($0.state) }
        let when =
            GoogleTime.millis(voided.voidedTimeMillis) ?? confirmed.flatMap(GooglePlayProvider.voidTime(of:))
            ?? provider.now()
        let refundType =
            voided.refundType
            ?? (orderState == .partiallyRefunded ? .quantityBasedPartial : orderState?.isVoid == true ? .full : nil)
        var purchase = try GooglePlayProvider.voided(
            fetched, orderID: orderID, token: token, package: package, at: when, reasonCode: voided.voidedReason,
            refund: GooglePlayProvider.refund(type: refundType, voidedQuantity: voided.voidedQuantity))
        if purchase.purchaseDate == nil { purchase.purchaseDate = GoogleTime.millis(voided.purchaseTimeMillis) }
        let decoded = try JSONEncoder.sortedForStorage.encode(voided)
        var stored = StoreNotification(
            store: .googlePlay, notificationID: "voided:\(orderID)", type: "VOIDED_PURCHASE",
            subtype: voided.voidedSource.flatMap { Self.sources[$0] }, environment: purchase.environment,
            appIdentifier: package, transactionID: orderID, originalTransactionID: purchase.originalTransactionID,
            productID: purchase.productID, signedAt: when, decodedJSON: decoded)
        stored.event = StoreEvent(kind: .refunded, purchase: purchase)
        return stored
    }

    static let sources: [Int: String] = [0: "user", 1: "developer", 2: "google"]
}
