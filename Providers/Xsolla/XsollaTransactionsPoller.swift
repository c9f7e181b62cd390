import Foundation
import JSON
package import ReceiptCore

/// Reconciles from Xsolla's transactions report: for every client, each of its projects is read
/// by date, page by page (`offset`, `limit`), with the client's merchant id and API key, and what
/// webhooks missed is recorded as they would have: a paid transaction claimed by its player under
/// `payment:<id>`, a refunded or canceled one under `refund:<id>`, for that client. Found again
/// (the overlap, a by-hand run), the same ids are applied once.
package struct XsollaTransactionsPoller: StorePolling {
    package let pollName = "xsolla.transactions"
    package let interval: Duration
    let provider: XsollaProvider

    package init(provider: XsollaProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    package func poll(
        owners: [ClientWithStoreCredentials], run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let (clients, known) = PollTargets.access(of: owners) { owner throws(StoreAPIError) in
            try XsollaProvider.access(client: owner.client, credentials: owner.credentials)
        }
        let targets = clients.flatMap { owner, access in
            owner.client.appIdentifiers(XsollaProvider.projectIDKind).map {
                (owner: owner, access: access, project: $0)
            }
        }
        try await PollTargets.each(targets, subject: "Xsolla transactions", known: known) { target in
            try await poll(target.owner, access: target.access, project: target.project, run: run, record: record)
        } problem: { target, error in
            guard let error = error as? StoreAPIError else { return nil }
            provider.logger.warning(
                "Xsolla's transactions report could not be read",
                ["client.id": target.owner.client.clientID, "project": target.project, "problem": error.message])
            return PollTargets.Problem(
                "project \(target.project) of client \(target.owner.client.clientID): \(error.operatorHelp)",
                retryAfter: error.retryAfter)
        }
    }

    func poll(
        _ owner: ClientWithStoreCredentials, access: XsollaProvider.Access, project: String, run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let configuration = provider.configuration
        let now = Int64(provider.now().timeIntervalSince1970 * 1000)
        let window = WindowedPoll.Window(
            oldest: now - Int64(configuration.maxWindow * 1000), now: now,
            firstStart: now - Int64(configuration.firstLookback * 1000))
        let limit = configuration.pageSize
        try await WindowedPoll.read(
            "\(pollName):\(owner.client.clientID):\(access.merchantID):\(project)", window: window, run: run,
            list: { cursor, until in
                let offset = cursor.pageToken.flatMap { Int($0) } ?? 0
                let records = try await provider.reports.page(
                    project: project, from: Date(timeIntervalSince1970: Double(cursor.since) / 1000),
                    to: Date(timeIntervalSince1970: Double(until) / 1000), offset: offset, limit: limit,
                    access: access)
                return (records, offset)
            },
            refusesToken: { ($0 as? StoreAPIError)?.kind == .refused },
            page: { listed in
                let (records, offset) = listed
                let found = records.flatMap { notifications(for: $0, owner: owner) }
                return WindowedPoll.Page(
                    notifications: found, listed: records.count,
                    nextToken: records.count < limit ? nil : String(offset + records.count))
            }, record: record)
        try await lateRefunds(owner, access: access, project: project, run: run, record: record)
    }

    /// The report's statuses of a transaction whose money went back.
    static let refundedStatuses = ["refunded", "canceled"]

    /// Refunds of sales made before the window: the report is searched by the date a transaction
    /// was made, so each run reads the refunded ones of the last `refundLookback` again, page by
    /// page. What is on record already is deduplicated on its notification id.
    func lateRefunds(
        _ owner: ClientWithStoreCredentials, access: XsollaProvider.Access, project: String, run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let until = provider.now()
        let from = max(run.since ?? .distantPast, until.addingTimeInterval(-provider.configuration.refundLookback))
        let limit = provider.configuration.pageSize
        for status in Self.refundedStatuses {
            var offset = 0
            while true {
                let records = try await provider.reports.page(
                    project: project, from: from, to: until, offset: offset, limit: limit, status: status,
                    access: access)
                run.pageRead()
                try await record(
                    records.filter { Self.refundedStatuses.contains(XsollaSale(report: $0).status ?? "") }.flatMap {
                        notifications(for: $0, owner: owner)
                    })
                guard records.count == limit else { break }
                offset += records.count
            }
        }
    }

    /// What one report record tells the ledger: nothing for a transaction not settled yet, nor
    /// for one that names no product (a Web Shop order's payment: its `order_paid` webhook names
    /// the items, under ids the record could not give).
    func notifications(for record: [String: JSONValue], owner: ClientWithStoreCredentials) -> [StoreNotification] {
        let sale = XsollaSale(report: record)
        guard sale.namesAProduct, let purchases = try? provider.settled(sale) else { return [] }
        let refunded = sale.status == "refunded" || sale.status == "canceled"
        let player = sale.player.flatMap { Identifier.problem($0) == nil ? $0 : nil }
        let webhook = XsollaWebhook(
            type: refunded ? "refund" : "payment", body: record, raw: Data(), project: sale.projectID)
        return purchases.map { purchase in
            let event =
                refunded
                ? StoreEvent(kind: .refunded, purchase: purchase)
                : StoreEvent(
                    kind: purchase.kind == .autoRenewableSubscription ? .renewed : .oneTimeCharge, purchase: purchase,
                    claimedBy: player)
            var notification = webhook.notification(
                store: provider.store, id: "\(webhook.type):\(purchase.transactionID)", purchase: purchase,
                event: event)
            notification.clientID = owner.client.clientID
            return notification
        }
    }
}
