import Foundation

/// Where a scheduled poll stopped, kept by the core across restarts and processes. A poller owns
/// the keys it uses (prefix them with its name) and the meaning of the values.
public protocol PollCursorStore: Sendable {
    func cursor(_ key: String) async throws -> String?
    /// Saves where the poll stands. Throws if this process no longer holds the poll's lease (it
    /// took too long and another process took over): the poll must stop then.
    func setCursor(_ key: String, to value: String) async throws
}

/// A store provider's scheduled work (reading a store's list of voided purchases). The core runs `poll` every
/// `interval`, in one process at a time across the cluster, and records what it hands over
/// exactly as it records push notifications: deduplicated on the notification id, each event
/// applied to the ledger with the same webhooks and refund callbacks.
public protocol StorePolling: Sendable {
    /// Names the poll's lease and cursors, e.g. `<store>.voided_purchases`.
    var pollName: String { get }
    var interval: Duration { get }
    /// One run over `owners` (every enabled client with an app of this store, with its secret
    /// settings). Hands each page's notifications to `record` before moving its cursor, so a crash
    /// repeats a page (deduplicated) rather than losing it.
    func poll(owners: [ClientWithStoreCredentials], cursors: any PollCursorStore,
              record: @Sendable ([StoreNotification]) async throws -> Void) async throws
}
