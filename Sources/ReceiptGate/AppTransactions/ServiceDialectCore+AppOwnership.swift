import Foundation
import ReceiptCore

extension ServiceDialectCore {
    /// Whether `evidence` is a proof of owning the app for `store` (a quick look, never a proof).
    func isAppOwnershipEvidence(_ evidence: String, store: StoreID) -> Bool {
        pipeline.stores[store]?.appOwnership?.isAppOwnershipEvidence(evidence) == true
    }

    func appOwnership(
        _ question: VerifyPipeline.AppOwnershipQuestion, store: StoreID, client info: ClientInfo, playerID: String?
    ) async throws -> AppOwnership {
        try await pipeline.appOwnership(
            question, store: store, client: try await current(info).client, playerID: playerID)
    }
}
