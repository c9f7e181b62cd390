import Foundation
import ReceiptCore

/// The operator asking a store to revoke (with a refund), cancel or defer the subscription a
/// purchase belongs to (a store declaring `SubscriptionManaging`), from the admin API or the
/// console, audited either way, refusals too. Nothing in the ledger moves here: the store's
/// notifications and read-backs say what changed.
struct SubscriptionChanges: Sendable {
    let stores: [StoreRegistration]
    let clients: ClientRepository
    let queries: OperatorQueries
    let audit: ConsoleRepository
    let logger: Logger

    enum Outcome: Sendable, Equatable {
        /// Asked; the new end when the store answered one.
        case requested(originalTransactionID: String, newExpiry: Date?)
        case notFound
        case notManageable(String)
        case refused(String)
    }

    func manager(of store: StoreID) -> (any SubscriptionManaging)? {
        stores.first { $0.store == store }?.subscriptionManager
    }

    /// Asks the store to make `change` to the subscription of `transactionID`, recording who asked.
    func change(
        _ change: SubscriptionChange, store: String, transactionID: String, who: String
    ) async throws -> Outcome {
        guard let registration = stores.first(where: { $0.store.rawValue == store }) else { return .notFound }
        guard let manager = registration.subscriptionManager else {
            return .notManageable(
                "\(registration.declaration.displayName) subscriptions are not changed from ReceiptGate")
        }
        guard let purchase = try await queries.purchase(store: store, transactionID: transactionID) else {
            return .notFound
        }
        guard let subscription = try await queries.subscription(of: purchase.record) else {
            return .notManageable("\(transactionID) is not a period of a subscription")
        }
        guard let owner = try await clients.owner(clientID: subscription.clientID, store: registration.declaration)
        else { return .notManageable("the subscription's client is disabled or has no app of this store") }
        let target = "\(store)/\(subscription.originalTransactionID) \(Self.describe(change))"
        let newExpiry: Date?
        do {
            newExpiry = try await manager.change(change, of: subscription, owner: owner)
        } catch let error as StoreVerificationError {
            try await audit.audit(
                who: who, action: change.auditAction + "-refused", target: "\(target): \(error.reason)")
            return .refused("\(error.reason): \(error.message)")
        }
        try await audit.audit(who: who, action: change.auditAction, target: target)
        logger.info(
            "subscription change requested",
            [
                "store": store, "original_transaction.id": subscription.originalTransactionID,
                "client.id": subscription.clientID, "change": change.auditAction, "by": who,
            ])
        return .requested(originalTransactionID: subscription.originalTransactionID, newExpiry: newExpiry)
    }

    /// The change in the audit log's words.
    static func describe(_ change: SubscriptionChange) -> String {
        switch change {
        case .revoke(let refund): "revoke, \(refund.rawValue) refund"
        case .cancel: "cancel renewals"
        case .deferRenewal(let days): "defer renewal \(days) days"
        }
    }
}
