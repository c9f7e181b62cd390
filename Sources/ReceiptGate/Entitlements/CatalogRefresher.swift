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
        await refresh(requests, until: budget.map { ContinuousClock.now + $0 }, retryFailedAfter: 0)
    }

    /// One pass of the worker: refreshes the requests due, a batch at a time, until none is left
    /// due or the task is cancelled (a shutdown: what it did not start is released at once, for
    /// another process). A failed one is retried 30 seconds later, by whichever worker comes
    /// first. The number refreshed.
    @discardableResult
    func drainDue() async throws -> Int {
        var done = 0
        while !Task.isCancelled {
            let due = try await queue.claimDue()
            if due.isEmpty { break }
            done += await refresh(due, until: nil, retryFailedAfter: 30)
        }
        return done
    }

    /// Refreshes `requests` in order while `deadline` has not passed and the task is not
    /// cancelled, checked before each (a product's refresh also stops between its chunks); the
    /// one cut short and those not started are released together, due at once. A failed one is
    /// due again after `retryFailedAfter` seconds. The number refreshed.
    private func refresh(
        _ requests: [CatalogRefreshes.Request], until deadline: ContinuousClock.Instant?, retryFailedAfter delay: Int
    ) async -> Int {
        var done = 0
        for (index, request) in requests.enumerated() {
            do {
                if RefreshCutShort.due(deadline) { throw RefreshCutShort() }
                try await entitlements.refreshProduct(
                    client: request.clientID, store: request.store, product: request.productID, until: deadline)
                try await queue.complete(request)
                done += 1
            } catch is RefreshCutShort {
                try? await queue.release(Array(requests[index...]))
                return done
            } catch {
                try? await queue.release(request, delaySeconds: delay, error: "\(error)")
            }
        }
        return done
    }
}
