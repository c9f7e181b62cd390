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
    /// Pages per package per run, so one huge backlog cannot hold the lease forever.
    static let maxPages = 50
    /// Re-read a little of the previous window: Google may list a void late; duplicates are free.
    static let overlapMillis: Int64 = 10 * 60 * 1000

    package init(provider: GooglePlayProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    /// Where one package's poll stands: the window being read, and the page within it.
    struct Cursor: Codable {
        var since: Int64
        var until: Int64?
        var pageToken: String?
    }

    package func poll(owners: [ClientWithStoreCredentials], run: any PollRun,
                     record: @Sendable ([StoreNotification]) async throws -> Void) async throws {
        var seen: Set<String> = [], failures: [String] = []
        for owner in owners {
            for package in owner.client.appIdentifiers(GooglePlayProvider.packageNameKind) where seen.insert(package).inserted {
                do {
                    try await poll(package: package, owner: owner, run: run, record: record)
                } catch let error as GooglePlayAPIError {
                    // One package's trouble (a key without access) does not stop the others; the
                    // run reports it at the end, and the next resumes from the saved cursor.
                    provider.logger.warning("voided purchases could not be polled", ["package": package, "problem": error.message])
                    failures.append("\(package): \(error.operatorHelp)")
                }
            }
        }
        if !failures.isEmpty { throw VoidedPurchasesUnavailable(problems: failures) }
    }

    struct VoidedPurchasesUnavailable: Error, CustomStringConvertible {
        let problems: [String]
        var description: String { "voided purchases not read for " + problems.joined(separator: "; ") }
    }

    func poll(package: String, owner: ClientWithStoreCredentials, run: any PollRun,
              record: @Sendable ([StoreNotification]) async throws -> Void) async throws {
        let key = try provider.serviceAccountKey(owner.credentials)
        let cursorKey = "\(pollName):\(package)"
        let nowMillis = Int64(provider.now().timeIntervalSince1970 * 1000)
        let oldest = nowMillis - Int64(provider.configuration.voidedPurchasesLookback * 1000)
        // A by-hand run starts where the operator said, with cursors of its own (empty at first).
        let start = run.since.map { Int64($0.timeIntervalSince1970 * 1000) } ?? oldest
        var cursor = try await run.cursor(cursorKey).flatMap { try? JSONDecoder().decode(Cursor.self, from: Data($0.utf8)) }
            ?? Cursor(since: start)
        cursor.since = max(cursor.since, oldest)  // Google refuses a start older than 30 days
        let until = cursor.until ?? nowMillis
        cursor.until = until
        for _ in 0..<Self.maxPages {
            let page = try await provider.api.voidedPurchases(package: package, startMillis: cursor.since, endMillis: until,
                                                              pageToken: cursor.pageToken, key: key)
            run.pageRead()
            var found: [StoreNotification] = []
            for voided in page.voidedPurchases ?? [] {
                if let notification = try await notification(voided, package: package, owner: owner, key: key) { found.append(notification) }
            }
            try await record(found)
            if let next = page.tokenPagination?.nextPageToken, !next.isEmpty {
                cursor.pageToken = next
                try await run.setCursor(cursorKey, to: try Self.encode(cursor))
            } else {
                try await run.setCursor(cursorKey, to: try Self.encode(Cursor(since: max(until - Self.overlapMillis, oldest))))
                return
            }
        }
    }

    private func notification(_ voided: VoidedPurchaseList.VoidedPurchase, package: String, owner: ClientWithStoreCredentials,
                              key: ServiceAccountKey) async throws -> StoreNotification? {
        guard let token = voided.purchaseToken, let orderID = voided.orderId else { return nil }
        var fetched: VerifiedPurchase?
        do {
            fetched = try await provider.fetch(GooglePlayEvidence(purchaseToken: token), package: package, key: key,
                                               consume: owner.client.setting(GooglePlayProvider.Setting.consume) == "on", lenient: true)
        } catch let error as GooglePlayAPIError where error.kind == .notFound || error.kind == .rejected {
            fetched = nil  // Google no longer has the purchase: the void alone says enough.
        }
        let when = GoogleTime.millis(voided.voidedTimeMillis) ?? provider.now()
        var purchase = try GooglePlayProvider.voided(fetched, orderID: orderID, token: token, package: package, at: when, reasonCode: voided.voidedReason,
                                                     refund: GooglePlayProvider.refund(type: voided.refundType, voidedQuantity: voided.voidedQuantity))
        if purchase.purchaseDate == nil { purchase.purchaseDate = GoogleTime.millis(voided.purchaseTimeMillis) }
        let decoded = try JSONEncoder.sortedForStorage.encode(voided)
        var stored = StoreNotification(store: .googlePlay, notificationID: "voided:\(orderID)", type: "VOIDED_PURCHASE",
                                       subtype: voided.voidedSource.flatMap { Self.sources[$0] }, environment: purchase.environment,
                                       appIdentifier: package, transactionID: orderID, originalTransactionID: purchase.originalTransactionID,
                                       productID: purchase.productID, signedAt: when, decodedJSON: decoded)
        stored.event = StoreEvent(kind: .refunded, purchase: purchase)
        return stored
    }

    static let sources: [Int: String] = [0: "user", 1: "developer", 2: "google"]

    static func encode(_ cursor: Cursor) throws -> String { String(decoding: try JSONEncoder().encode(cursor), as: UTF8.self) }
}
