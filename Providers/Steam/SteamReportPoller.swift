import Foundation
import JSON
package import ReceiptCore

/// Reads each client's transaction report (`GetReport` v5, type `GAMESALES`: the orders started
/// with InitTxn; partner.steamgames.com/doc/webapi/ISteamMicroTxn#GetReport) and applies what
/// reversed a purchase: `Refunded`, `Chargedback`, `RefundedSuspectedFraud`,
/// `RefundedFriendlyFraud` for every line of the order, `PartialRefund` for the lines whose own
/// status is one of those. The report is read from a time: Valve's advice is to ask again from
/// the last order's `time`, so a page starts with the order it ended on; that order is skipped.
/// Each reversal is recorded once, under `{order}-{item}:{status}`, however often it is read.
package struct SteamReportPoller: StorePolling {
    package let pollName = "steam.report"
    package let interval: Duration
    let provider: SteamProvider

    package init(provider: SteamProvider, interval: Duration) {
        self.provider = provider
        self.interval = interval
    }

    package func poll(
        owners: [ClientWithStoreCredentials], run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let (targets, known) = PollTargets.access(of: owners, SteamAccess.of)
        try await PollTargets.each(targets, subject: "Steam transaction reports", known: known) { target in
            try await poll(target.owner, access: target.access, run: run, record: record)
        } problem: { target, error in
            guard let error = error as? StoreAPIError else { return nil }
            provider.logger.warning(
                "Steam's transaction report could not be read",
                ["client.id": target.owner.client.clientID, "app": target.access.appID, "problem": error.message])
            return PollTargets.Problem(
                "app \(target.access.appID) of client \(target.owner.client.clientID): \(error.operatorHelp)",
                retryAfter: error.retryAfter)
        }
    }

    /// Where a page stands: the `time` it asks from, and the orders already read at that time.
    struct Boundary: Codable, Equatable {
        var time: String
        var orders: [String]

        var token: String { String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self) }

        static func of(_ token: String?) -> Boundary? {
            token.flatMap { try? JSONDecoder().decode(Boundary.self, from: Data($0.utf8)) }
        }
    }

    func poll(
        _ owner: ClientWithStoreCredentials, access: SteamAccess, run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let configuration = provider.configuration
        let now = Int64(provider.now().timeIntervalSince1970 * 1000)
        let window = WindowedPoll.Window(
            oldest: 0, now: now, firstStart: now - Int64(configuration.firstLookback * 1000))
        try await WindowedPoll.read(
            "\(pollName):\(owner.client.clientID):\(access.appID):\(access.environment.rawValue)", window: window,
            run: run,
            list: { cursor, _ -> (Boundary, [SteamOrder]) in
                let boundary =
                    Boundary.of(cursor.pageToken)
                    ?? Boundary(
                        time: SteamOrder.text(Date(timeIntervalSince1970: Double(cursor.since) / 1000)), orders: [])
                let params = try await provider.api.call(
                    "GET", access.microTxn, "GetReport", version: 5,
                    parameters: [
                        ("appid", access.appID), ("type", "GAMESALES"), ("time", boundary.time),
                        ("maxresults", String(configuration.reportPageSize)),
                    ], key: access.key, deadline: nil)
                return (boundary, (params["orders"]?.array ?? []).map(SteamOrder.init))
            },
            refusesToken: { _ in false },
            page: { (listed: (Boundary, [SteamOrder])) in
                let (boundary, orders) = listed
                let fresh = orders.filter { order in
                    !(order.time == boundary.time && boundary.orders.contains(order.orderID ?? ""))
                }
                let found = fresh.flatMap { notifications(for: $0, owner: owner, access: access) }
                // The next page starts at the last order's time, which it lists again: the
                // orders already read at that time are skipped then. A page of nothing new ends it.
                guard let last = fresh.last?.time else {
                    return WindowedPoll.Page(notifications: found, listed: orders.count, nextToken: nil)
                }
                let atLast = orders.filter { $0.time == last }.compactMap(\.orderID)
                let carried = last == boundary.time ? boundary.orders : []
                let next = Boundary(time: last, orders: Array(Set(carried + atLast)).sorted())
                return WindowedPoll.Page(notifications: found, listed: orders.count, nextToken: next.token)
            }, record: record)
    }

    /// What one order of the report tells the ledger: a reversal of each line it reverses, for
    /// the client whose report it is.
    func notifications(
        for order: SteamOrder, owner: ClientWithStoreCredentials, access: SteamAccess
    ) -> [StoreNotification] {
        guard let orderID = order.orderID, orderID != "0" else { return [] }
        return order.items.compactMap { item -> StoreNotification? in
            guard let itemID = item.itemID, let status = SteamProvider.reversal(order: order.status, item: item.status)
            else { return nil }
            let purchase = provider.purchase(
                orderID: orderID, itemID: itemID, steam: order, item: item, access: access)
            let event = StoreEvent(
                kind: status == SteamOrder.Status.chargedback ? .revoked : .refunded, purchase: purchase)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            var notification = StoreNotification(
                store: .steam, notificationID: "\(purchase.transactionID):\(status)", type: status,
                subtype: order.status, environment: access.environment, appIdentifier: access.appID,
                transactionID: purchase.transactionID, originalTransactionID: nil, productID: itemID,
                signedAt: order.date, decodedJSON: (try? encoder.encode(order.raw)) ?? Data("{}".utf8))
            notification.event = event
            notification.clientID = owner.client.clientID
            return notification
        }
    }
}
