import Foundation
import ReceiptCore

/// Reads back from its store each subscription whose period (and grace) ended with no news: a
/// renewal, expiry or billing issue whose push was lost. At most `budget` subscriptions a run,
/// never-asked first, then those asked longest ago; what the store says is recorded as a push
/// is, so a renewal fires `subscription.renewed` once however many times it is read.
struct QuietSubscriptionPoll: StorePolling {
    let store: StoreID
    let reader: any SubscriptionReading
    let queries: QuietSubscriptionQueries
    let settings: QuietSubscriptionSettings

    var pollName: String { "\(store.rawValue).quiet_subscriptions" }
    var interval: Duration { .seconds(settings.intervalSeconds) }

    func poll(
        owners: [ClientWithStoreCredentials], run: any PollRun,
        record: @Sendable ([StoreNotification]) async throws -> Void
    ) async throws {
        let due = try await queries.due(
            store: store, after: Double(settings.afterSeconds), spacing: Double(settings.spacingSeconds),
            limit: settings.budget)
        let owners = Dictionary(owners.map { ($0.client.clientID, $0) }, uniquingKeysWith: { first, _ in first })
        var failures: [String: String] = [:]
        for subscription in due where failures[subscription.clientID] == nil {
            guard let owner = owners[subscription.clientID] else {
                // The client no longer registers an app of this store: nothing to ask with; it waits its turn.
                try await queries.markReread(subscription, learned: false)
                continue
            }
            run.subscriptionReread()
            do {
                if let notification = try await reader.readBack(subscription, owner: owner) {
                    try await record([notification])
                    try await queries.markReread(subscription, learned: true)
                } else {
                    try await queries.markReread(subscription, learned: false)
                }
            } catch let failure as SubscriptionReadFailed where !failure.storeWide {
                // The client's own trouble (its key, its secret): its other subscriptions wait for
                // the next run; other clients' are still read. This one is asked again first.
                failures[subscription.clientID] = failure.message
            }
            // Each subscription read renews the lease (and stops the run if another process took it).
            try await run.setCursor("\(pollName):last", to: subscription.originalTransactionID)
        }
        if !failures.isEmpty {
            throw QuietReadsFailed(problems: failures.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" })
        }
    }

    struct QuietReadsFailed: Error, CustomStringConvertible {
        let problems: [String]
        var description: String { "subscriptions not read back for " + problems.joined(separator: "; ") }
    }
}
