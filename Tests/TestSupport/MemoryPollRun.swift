public import Foundation
public import ReceiptCore
import Synchronization

/// A poll run as the service gives one to a poller, its cursors in memory (Postgres, behind the
/// lease, in the service), counting what the poller reports.
public final class MemoryPollRun: PollRun {
    public let since: Date?
    private let saved = Mutex<[String: String]>([:])
    private let counts = Mutex((pages: 0, rereads: 0))

    public init(since: Date? = nil) { self.since = since }

    public var pages: Int { counts.withLock { $0.pages } }
    public var rereads: Int { counts.withLock { $0.rereads } }

    public func cursor(_ key: String) async throws -> String? { saved.withLock { $0[key] } }
    public func setCursor(_ key: String, to value: String) async throws { saved.withLock { $0[key] = value } }
    public func pageRead() { counts.withLock { $0.pages += 1 } }
    public func subscriptionReread() { counts.withLock { $0.rereads += 1 } }
}
