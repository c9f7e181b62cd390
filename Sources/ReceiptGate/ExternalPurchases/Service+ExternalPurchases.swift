import Foundation
import ReceiptCore

extension Service {
    /// One pass of the external purchase reports' sweep now (what the background loop runs on
    /// schedule): reports owed are queued in the outbox. Returns how many.
    @discardableResult
    public func reportExternalPurchases() async throws -> Int {
        try await externalPurchaseReports.sweep()
    }

    var externalPurchaseReports: ExternalPurchaseReports {
        ExternalPurchaseReports(
            stores: stores, tokens: ExternalPurchaseTokenRepository(pool: database.pool), clients: repositories.clients,
            metrics: metrics, logger: logger, now: now)
    }
}
