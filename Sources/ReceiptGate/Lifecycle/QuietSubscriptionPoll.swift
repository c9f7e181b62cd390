import Foundation
import ReceiptCore

/// Reads back from its store each subscription whose period (and grace) ended with no news: a
/// renewal, expiry or billing issue whose push was lost. At most `budget` store calls a run,
/// never-asked first, then the longest over; what the store says is recorded as a push is, so a
/// renewal fires `subscription.renewed` once however many times it is read.
struct QuietSubscriptionPoll: StorePolling {
    let store: StoreID
    let reader: any SubscriptionReading
    let queries: QuietSubscriptionQueries
    let settings: QuietSubscriptionSettings

    var pollName: String { "\(store.rawValue).quiet_subscriptions" }
    var interval: Duration { .seconds(settings.intervalSeconds) }

    func poll(owners: [ClientWithStoreCredentials], run: any PollRun,
              record: @Sendable ([StoreNotification]) async throws -> Void) async throws {
        let due = try await queries.due(store: store, after: Double(settings.afterSeconds), spacing: Double(settings.spacingSeconds),
                                        limit: settings.budget)
        let owners = Dictionary(owners.map { ($0.client.clientID, $0) }, uniquingKeysWith: { first, _ in first })
        for subscription in due {
            // A disabled client, or one that no longer registers an app of this store: not asked.
            guard let owner = owners[subscription.clientID] else { continue }
            run.subscriptionReread()
            // A failure stops the run before this subscription is marked: the next run asks again.
            if let notification = try await reader.readBack(subscription, owner: owner) { try await record([notification]) }
            try await queries.markReread(subscription)
        }
    }
}
