import Foundation
public import ReceiptCore

extension SteamProvider {
    /// Finishes the order the receipt names (the service's order id, found by the core:
    /// `context.order`) and returns one purchase per line, each its player's. `FinalizeTxn` is
    /// sent once: a verification after an earlier attempt (whose answer may have been lost) asks
    /// `QueryTxn` first and finalizes only an order Steam still holds as `Approved`. Either way
    /// `QueryTxn` must then say the order succeeded for this app and the order's Steam account.
    /// Throws `StoreVerificationError`.
    public func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase] {
        guard let order = context.order else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "ORDER_NOT_FOUND",
                message: "a Steam receipt is the order id POST /v1/orders answered")
        }
        let access: SteamAccess
        let finished: SteamOrder
        do {
            access = try SteamAccess.of(
                client: context.client, credentials: context.credentials, apps: context.appIdentifiers)
            finished = try await finish(order, access: access, deadline: context.deadline)
        } catch let error as StoreAPIError {
            if error.kind == .credentialsRefused || error.kind == .notConfigured {
                logger.error(
                    "Steam cannot be asked for this client; the operator must fix its publisher key",
                    ["client.id": context.client?.clientID ?? "", "problem": error.message])
            }
            throw error.verificationError
        }
        guard finished.steamID == order.storeAccount, finished.orderID == nil || finished.orderID == order.orderID
        else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "ORDER_ACCOUNT_MISMATCH",
                message: "Steam holds the order for another Steam account than the one it was started for")
        }
        return purchases(finished, order: order, access: access)
    }

    /// The order as Steam holds it once finalized. Throws `StoreAPIError`, or
    /// `StoreVerificationError` for an order that is not (or never will be) finished.
    func finish(
        _ order: OrderRecord, access: SteamAccess, deadline: ContinuousClock.Instant?
    ) async throws -> SteamOrder {
        if order.earlierAttempts > 0 {
            let known = try await query(order, access: access, deadline: deadline)
            if known.status != SteamOrder.Status.approved {
                return try settled(known)
            }
        }
        do {
            _ = try await api.call(
                "POST", access.microTxn, "FinalizeTxn", version: 2,
                parameters: [("orderid", order.orderID), ("appid", access.appID)], key: access.key, deadline: deadline)
        } catch {
            switch error.storeCode {
            // Already committed: an earlier finalize reached Steam; what it holds now says the rest.
            case "6": break
            // Not approved yet: the player may still approve it in the overlay.
            case "5": throw Self.notApproved
            // Denied by the player, past the time to finalize, fraud, no funds: never finished.
            case "10", "11", "100", "101", "102", "103", "104", "105":
                throw StoreVerificationError.orderClosed(error.message)
            default: throw error
            }
        }
        return try settled(try await query(order, access: access, deadline: deadline))
    }

    func query(
        _ order: OrderRecord, access: SteamAccess, deadline: ContinuousClock.Instant?
    ) async throws(StoreAPIError)
        -> SteamOrder
    {
        SteamOrder(
            .object(
                try await api.call(
                    "GET", access.microTxn, "QueryTxn", version: 3,
                    parameters: [("appid", access.appID), ("orderid", order.orderID)], key: access.key,
                    deadline: deadline)))
    }

    static let notApproved = StoreVerificationError(
        code: .verificationFailed, reason: "ORDER_NOT_APPROVED",
        message: "the player has not approved the order in Steam yet; verify it again once approved")

    /// The order if Steam finished it (reversed since included: recorded as it now stands).
    func settled(_ order: SteamOrder) throws -> SteamOrder {
        switch order.status {
        case SteamOrder.Status.succeeded, SteamOrder.Status.partialRefund: return order
        case let status? where SteamOrder.Status.reversed.contains(status): return order
        case SteamOrder.Status.initialized, SteamOrder.Status.approved: throw Self.notApproved
        case SteamOrder.Status.failed:
            throw StoreVerificationError.orderClosed("Steam says the order failed or was denied")
        default:
            throw StoreVerificationError(
                code: .verificationFailed, reason: "ORDER_NOT_SUCCEEDED",
                message: "Steam holds the order as \(order.status ?? "unknown")")
        }
    }

    /// One purchase per line of the order, as the service started it and Steam finished it.
    func purchases(_ finished: SteamOrder, order: OrderRecord, access: SteamAccess) -> [VerifiedPurchase] {
        order.items.map { line in
            let steam = finished.items.first { $0.itemID == line.productID }
            var purchase = purchase(
                orderID: order.orderID, itemID: line.productID, steam: finished, item: steam, access: access)
            purchase.quantity = steam?.quantity ?? line.quantity
            purchase.buyer = order.playerID
            return purchase
        }
    }

    /// A line of a Steam order as a purchase: `{order id}-{item id}`, the same whether the
    /// verification or the report records it.
    func purchase(
        orderID: String, itemID: String, steam order: SteamOrder, item: SteamOrder.Item?, access: SteamAccess
    ) -> VerifiedPurchase {
        var purchase = VerifiedPurchase(
            store: .steam, environment: access.environment, transactionID: "\(orderID)-\(itemID)")
        purchase.appIdentifier = access.appID
        purchase.orderID = orderID
        purchase.productID = itemID
        purchase.quantity = item?.quantity
        purchase.priceMilliunits = item?.amount.flatMap(SteamMoney.milliunits)
        purchase.currency = order.currency
        purchase.storefront = order.country
        purchase.purchaseDate = order.date
        purchase.storeAttributes["steam_transid"] = order.transactionID
        if let status = Self.reversal(order: order.status, item: item?.status) {
            purchase.revocationDate = order.date ?? now()
            purchase.revocationReason = status
        }
        return purchase
    }

    /// The reversed status that applies to one line: its own for a partial refund, else the order's.
    static func reversal(order: String?, item: String?) -> String? {
        if let item, SteamOrder.Status.reversed.contains(item) { return item }
        if order != SteamOrder.Status.partialRefund, let order, SteamOrder.Status.reversed.contains(order) {
            return order
        }
        return nil
    }
}
