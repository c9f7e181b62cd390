import Foundation
import Postgres

/// Carries out the catalog refreshes owed (`CatalogRefreshes`): at once for the caller that made
/// the change (within a time budget, so an admin request answers quickly), and in the background
/// for whatever is left (cut short, failed, or its caller gone), with retries.
struct CatalogRefresher: Sendable {
    let entitlements: EntitlementRepository
    let queue: CatalogRefreshes

    init(pool: PostgresPool) {
        entitlements = EntitlementRepository(pool: pool)
        queue = CatalogRefreshes(pool: pool)
    }

    /// Refreshes what the caller just requested, until `budget` (nil: however long it takes) is
    /// spent; what is not done is handed to the worker at once. Never throws: the change itself
    /// committed, and its request outlives any failure here.
    func refreshNow(_ requests: [CatalogRefreshes.Request], within budget: Duration?) async {
        let deadline = budget.map { ContinuousClock.now + $0 }
        for request in requests {
            do {
                try await entitlements.refreshProduct(client: request.clientID, store: request.store, product: request.productID, until: deadline)
                try await queue.complete(request)
            } catch {
                try? await queue.release(request, error: error is RefreshCutShort ? nil : "\(error)")
            }
        }
    }

    /// One pass of the worker: refreshes the requests due, a batch at a time, until none is left
    /// due. A failed one is retried 30 seconds later, by whichever worker comes first. The number refreshed.
    @discardableResult
    func drainDue() async throws -> Int {
        var done = 0
        while !Task.isCancelled {
            let due = try await queue.claimDue()
            if due.isEmpty { break }
            for request in due {
                do {
                    try await entitlements.refreshProduct(client: request.clientID, store: request.store, product: request.productID)
                    try await queue.complete(request)
                    done += 1
                } catch {
                    try? await queue.release(request, delaySeconds: 30, error: "\(error)")
                }
            }
        }
        return done
    }
}
