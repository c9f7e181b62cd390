import Foundation
import HTTPClient
import ReceiptCore

extension VerifyPipeline {
    /// What a caller asks a store to prove ownership of the app with.
    enum AppOwnershipQuestion: Sendable {
        /// A device's signed proof, sent as verify evidence.
        case evidence(String)
        /// Any of the buyer's transaction ids: the store is asked.
        case transactionID(String)
    }

    /// Proves who owns the client's app, asked as a store call for the client is (its apps of
    /// the store, its credentials, the request's deadline); an environment the client does not
    /// accept is refused by the one rule. With a player, the buyer's account is kept with it.
    func appOwnership(
        _ question: AppOwnershipQuestion, store: StoreID, client: Client, playerID: String?
    ) async throws -> AppOwnership {
        guard let registration = stores[store], let prover = registration.appOwnership else {
            throw StoreVerificationError(
                code: .notFound, reason: "NO_APP_OWNERSHIP", message: "\(store) proves no app ownership here")
        }
        let context = try await storeCallContext(registration, store: store, client: client)
        let ownership = try await OutboundDeadline.$current.withValue(context.deadline) {
            switch question {
            case .evidence(let evidence): try await prover.proveAppOwnership(evidence: evidence, context: context)
            case .transactionID(let id): try await prover.lookUpAppOwnership(transactionID: id, context: context)
            }
        }
        try VerificationChecks.accepts(ownership.environment, accepted: Set(client.environments))
        if let playerID {
            try await AppTransactionPlayerRepository(pool: transactions.pool).keep(
                ownership, store: store, player: playerID, clientID: client.clientID)
        }
        logger.info(
            "app ownership proven",
            ["client.id": client.clientID, "store": store.rawValue, "environment": ownership.environment.rawValue])
        return ownership
    }
}
