import Foundation
import HTTPClient
import HTTPServer
import ReceiptCore

extension VerifyPipeline {
    /// Starts an order with a store that starts them: asked with what a verification of this
    /// client would be asked with, recorded as started (under a fresh id of the service's) before
    /// the store hears of it, so every order the store knows is on record. Throws
    /// `StoreVerificationError` for a refusal.
    func startOrder(
        _ draft: OrderDraft, store: StoreID, client: Client
    ) async throws -> (orderID: String, started: StartedOrder) {
        guard let registration = stores[store], let starter = registration.orderStarter, let orders else {
            throw StoreVerificationError(
                code: .invalidField, reason: "ORDERS_NOT_STARTED", message: "\(store) orders are not started here")
        }
        let context = try await storeCallContext(registration, store: store, client: client)
        var order = try await completed(draft, store: store, starter: starter, context: context, orders: orders)
        if registration.accountAuthenticator != nil {
            order.accountProvenAt = try await orders.provenAt(
                account: order.storeAccount, store: store, clientID: client.clientID)
        }
        for _ in 0..<3 {
            order.orderID = OrderRepository.newOrderID()
            if try await orders.insert(order, store: store, clientID: client.clientID) { break }
            order.orderID = ""
        }
        guard !order.orderID.isEmpty else {
            throw StoreVerificationError(
                code: .verifierError, reason: "ORDER_ID_TAKEN", message: "no free order id was found; safe to retry",
                isRetryable: true)
        }
        let started: StartedOrder
        do {
            started = try await OutboundDeadline.$current.withValue(context.deadline) {
                try await starter.startOrder(order, context: context)
            }
        } catch let error as StoreVerificationError {
            try await orders.closed(store: store, orderID: order.orderID, reason: "\(error.reason): \(error.message)")
            logger.info(
                "order refused",
                [
                    "client.id": client.clientID, "store": store.rawValue, "order.id": order.orderID,
                    "error.reason": error.reason,
                ])
            throw error
        }
        try await orders.opened(store: store, orderID: order.orderID, storeTransactionID: started.storeTransactionID)
        logger.info(
            "order started", ["client.id": client.clientID, "store": store.rawValue, "order.id": order.orderID])
        return (order.orderID, started)
    }

    /// The order with what the body left out filled in: the currency from the store (the buyer's
    /// own, where the store can say), each line's price and description from the client's catalog
    /// in that currency. What is still missing is refused before the store is asked.
    private func completed(
        _ draft: OrderDraft, store: StoreID, starter: any OrderStarting, context: VerificationContext,
        orders: OrderRepository
    ) async throws -> OrderRequest {
        var order = draft.request
        if order.currency.isEmpty {
            let currency = try await OutboundDeadline.$current.withValue(context.deadline) {
                try await starter.buyerCurrency(account: order.storeAccount, context: context)
            }
            guard let currency, OrderDraft.isCurrencyCode(currency) else {
                throw StoreVerificationError(
                    code: .missingFields, reason: "NO_CURRENCY",
                    message: "missing field 'currency': \(store) does not say the buyer's currency")
            }
            order.currency = currency
        }
        for index in draft.unpriced.union(draft.undescribed).sorted() {
            let line = order.items[index]
            let price = try await orders.catalogPrice(
                clientID: context.client?.clientID ?? "", store: store, product: line.productID,
                currency: order.currency)
            if draft.unpriced.contains(index) {
                guard let price else {
                    throw StoreVerificationError(
                        code: .invalidField, reason: "NO_CATALOG_PRICE",
                        message: "items[\(index)] gives no price_milliunits and the catalog has no price of "
                            + "\(line.productID) in \(order.currency) (receiptgate products price)")
                }
                order.items[index].unitPriceMilliunits = price.milliunits
            }
            if draft.undescribed.contains(index) {
                order.items[index].description = price?.description ?? line.productID
            }
            guard order.items[index].totalMilliunits != nil else {
                throw StoreVerificationError(
                    code: .invalidField, reason: "INVALID_ORDER", message: "items[\(index)] totals too much")
            }
        }
        return order
    }

    /// Proves a player's store account from a ticket the store issued, and notes for this client
    /// when it was proven. Throws `StoreVerificationError` for a refusal.
    func authenticate(
        ticket: String, identity: String?, store: StoreID, client: Client, now: Date
    ) async throws -> AuthenticatedAccount {
        guard let registration = stores[store], let authenticator = registration.accountAuthenticator, let orders
        else {
            throw StoreVerificationError(
                code: .invalidField, reason: "NO_ACCOUNT_TICKETS", message: "\(store) has no tickets to authenticate")
        }
        let context = try await storeCallContext(registration, store: store, client: client)
        let proven = try await OutboundDeadline.$current.withValue(context.deadline) {
            try await authenticator.authenticate(ticket: ticket, identity: identity, context: context)
        }
        try await orders.proven(account: proven.account, store: store, clientID: client.clientID, at: now)
        return proven
    }

    /// What a store's call made for the client (not a verification) is given: the client's apps of
    /// that store (none registered is refused), its environments and credentials, and the deadline
    /// that leaves time to record.
    func storeCallContext(
        _ registration: StoreRegistration, store: StoreID, client: Client
    ) async throws -> VerificationContext {
        let apps = Set(client.info.appIdentifiers(registration.declaration.identifiers))
        guard !apps.isEmpty else {
            throw StoreVerificationError(
                code: .bundleMismatch, reason: "NO_APP_REGISTERED",
                message: "this client has no app registered for \(store)")
        }
        var context = VerificationContext(
            appIdentifiers: apps, environments: Set(client.environments), client: client.info,
            credentials: try await credentials(of: client, for: store))
        if let timeLeftForRecording, let requestDeadline = RequestDeadline.current {
            context.deadline = requestDeadline - timeLeftForRecording
        }
        return context
    }
}
