import Foundation
import ReceiptCore

/// The operator asking a store to refund the order a purchase belongs to (a store declaring
/// `OrderRefunding`), from the admin API or the console, audited either way. Nothing in the
/// ledger moves here: the store's record, read on schedule, says when the refund happened.
struct OrderRefunds: Sendable {
    let stores: [StoreRegistration]
    let clients: ClientRepository
    let queries: OperatorQueries
    let audit: ConsoleRepository
    let logger: Logger

    enum Outcome: Sendable, Equatable {
        case requested(orderID: String)
        case notFound
        case notRefundable(String)
        case refused(String)
    }

    func refunder(of store: String) -> (any OrderRefunding)? {
        stores.first { $0.store.rawValue == store }?.orderRefunder
    }

    /// Asks the store to refund the order of `transactionID`, recording who asked.
    func refund(store: String, transactionID: String, who: String) async throws -> Outcome {
        guard let registration = stores.first(where: { $0.store.rawValue == store }) else { return .notFound }
        guard let refunder = registration.orderRefunder else {
            return .notRefundable("\(registration.declaration.displayName) purchases are refunded by the store itself")
        }
        guard let purchase = try await queries.purchase(store: store, transactionID: transactionID) else {
            return .notFound
        }
        guard let orderID = purchase.record.orderID,
            let owner = try await clients.owner(clientID: purchase.record.clientID, store: registration.declaration)
        else { return .notRefundable("the purchase names no order of an enabled client") }
        do {
            try await refunder.refundOrder(orderID, environment: purchase.record.environment, owner: owner)
        } catch let error as StoreVerificationError {
            try await audit.audit(
                who: who, action: "store-refund-refused", target: "\(store)/\(orderID): \(error.reason)")
            return .refused("\(error.reason): \(error.message)")
        }
        try await audit.audit(who: who, action: "store-refund", target: "\(store)/\(orderID)")
        logger.info(
            "store refund requested",
            ["store": store, "order.id": orderID, "client.id": purchase.record.clientID, "by": who])
        return .requested(orderID: orderID)
    }

    /// `POST /admin/transactions/{store}/{transaction_id}/refund`.
    var routes: [Route] {
        [
            Route("POST", "/admin/transactions/{store}/{transaction_id}/refund", authentication: .admin) { _, context in
                let store = context.pathParameters["store"] ?? "",
                    transactionID = context.pathParameters["transaction_id"] ?? ""
                guard Identifier.problem(store) == nil, Identifier.problem(transactionID) == nil else {
                    return NativeAPI.error(.invalidField, "store and transaction id must be identifiers")
                }
                do {
                    switch try await refund(store: store, transactionID: transactionID, who: "admin-api") {
                    case .requested(let orderID):
                        return .json(
                            [
                                "status": "requested", "order_id": orderID,
                                "note": "the ledger moves when the store reports the refund",
                            ],
                            status: 202)
                    case .notFound: return NativeAPI.error(.notFound, "no purchase \(transactionID) in \(store)")
                    case .notRefundable(let why): return NativeAPI.error(.invalidField, why)
                    case .refused(let why): return NativeAPI.error(.verificationFailed, why)
                    }
                } catch {
                    return NativeAPI.error(.verifierError, "the refund could not be asked for; safe to retry")
                }
            }
        ]
    }
}
