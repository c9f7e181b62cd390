public import Foundation

/// The engine every store's list poller runs on (a store's notification history, its voided or
/// cancelled purchases, and the lists to come): a window of the store's list, read
/// page by page, its cursor saved after each page is recorded, so a crash repeats a page (what
/// repeats is deduplicated) and never skips one. A poller supplies only its wire format: how to
/// read one page, and which failure means the store refused a saved page token.
public enum WindowedPoll {
    /// Where one list stands: the window being read (from `since` to `until`, in epoch ms) and the
    /// page within it. Stored as JSON under the poller's key.
    public struct Cursor: Codable, Sendable, Equatable {
        public var since: Int64
        public var until: Int64?
        public var pageToken: String?

        public init(since: Int64, until: Int64? = nil, pageToken: String? = nil) {
            self.since = since
            self.until = until
            self.pageToken = pageToken
        }

        enum CodingKeys: String, CodingKey { case since, until, pageToken, paginationToken, continuationToken }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            since = try container.decode(Int64.self, forKey: .since)
            until = try container.decodeIfPresent(Int64.self, forKey: .until)
            // The names some store pollers saved their tokens under before this engine.
            pageToken =
                try container.decodeIfPresent(String.self, forKey: .pageToken)
                ?? container.decodeIfPresent(String.self, forKey: .paginationToken)
                ?? container.decodeIfPresent(String.self, forKey: .continuationToken)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(since, forKey: .since)
            try container.encodeIfPresent(until, forKey: .until)
            try container.encodeIfPresent(pageToken, forKey: .pageToken)
        }

        var stored: String { String(decoding: (try? JSONEncoder().encode(self)) ?? Data(), as: UTF8.self) }

        static func saved(_ value: String?) -> Cursor? {
            value.flatMap { try? JSONDecoder().decode(Cursor.self, from: Data($0.utf8)) }
        }
    }

    /// What the store keeps and how a window moves on.
    public struct Window: Sendable {
        /// The oldest instant the store still lists (epoch ms): a cursor behind it starts again there.
        public var oldest: Int64
        /// Now, by the poller's clock: a new window ends here.
        public var now: Int64
        /// Where a list never read before starts (a by-hand run starts where the operator said).
        public var firstStart: Int64
        /// Each window starts this much before the last one ended: a store may list an entry a
        /// little after its time.
        public var overlap: Int64 = 10 * 60 * 1000
        /// Pages per run, so one huge backlog cannot hold the poll's lease forever.
        public var maxPages = 50
        /// Whether a token after a page that listed nothing ends the window (a store known to hand
        /// out such tokens for ever); otherwise only a token repeated does.
        public var emptyPageEndsWindow = false

        public init(oldest: Int64, now: Int64, firstStart: Int64? = nil) {
            self.oldest = oldest
            self.now = now
            self.firstStart = firstStart ?? oldest
        }
    }

    /// One page as the store listed it.
    public struct Page: Sendable {
        /// What the page holds for the ledger (entries that are not may have been skipped).
        public var notifications: [StoreNotification]
        /// How many entries the store listed on the page, skipped ones included.
        public var listed: Int
        /// The token of the next page, when the store says there is one.
        public var nextToken: String?

        public init(notifications: [StoreNotification], listed: Int, nextToken: String?) {
            self.notifications = notifications
            self.listed = listed
            self.nextToken = nextToken
        }
    }

    /// Why a window was taken as read although the store offered another page.
    public enum DeadToken: Sendable, Equatable {
        /// The store gave the token it was just asked with.
        case repeated
        /// The store listed nothing yet gave a token: following it would read the same nothing.
        case afterAnEmptyPage
    }

    /// Reads `key`'s list from where its cursor stands: up to `maxPages` pages, each recorded
    /// before the cursor moves past it. A window read to its end is followed by the next, from
    /// `overlap` before its end. `list` asks the store for one page; `page` reads what it listed.
    /// A saved page token the store refuses (`refusesToken`, asked only of `list`'s failures) is
    /// dropped, so the next run reads the window again from its first page instead of failing on
    /// that token for ever; the failure is still thrown.
    public static func read<Listed>(
        _ key: String, window: Window, run: any PollRun,
        list: (_ cursor: Cursor, _ until: Int64) async throws -> Listed,
        refusesToken: (any Error) -> Bool,
        page: (Listed) async throws -> Page,
        record: @Sendable ([StoreNotification]) async throws -> Void,
        deadToken: (DeadToken) -> Void = { _ in }
    ) async throws {
        let start = run.since.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } ?? window.firstStart
        var cursor = Cursor.saved(try await run.cursor(key)) ?? Cursor(since: start)
        if let until = cursor.until, until <= window.oldest {
            // A window all older than the store keeps (polling was off, a key failed for weeks):
            // its token leads nowhere; a new window from the oldest the store has.
            cursor = Cursor(since: window.oldest)
        }
        // No older than the store keeps (a store refuses an older start); a saved token is kept:
        // were it refused with the new start, it is dropped and the window read from its start.
        cursor.since = max(cursor.since, window.oldest)
        // A window that makes no sense: a new one from its start.
        if let until = cursor.until, until <= cursor.since { cursor = Cursor(since: cursor.since) }
        let until = cursor.until ?? window.now
        guard until > cursor.since else { return }  // a start still ahead: nothing to read yet
        cursor.until = until
        for _ in 0..<window.maxPages {
            let listed: Listed
            do { listed = try await list(cursor, until) } catch {
                if cursor.pageToken != nil, refusesToken(error) {
                    try await run.setCursor(key, to: Cursor(since: cursor.since).stored)
                }
                throw error
            }
            let read = try await page(listed)
            run.pageRead()
            try await record(read.notifications)
            if let next = read.nextToken, !next.isEmpty {
                let repeated = next == cursor.pageToken, empty = window.emptyPageEndsWindow && read.listed == 0
                if !repeated, !empty {
                    cursor.pageToken = next
                    try await run.setCursor(key, to: cursor.stored)
                    continue
                }
                deadToken(repeated ? .repeated : .afterAnEmptyPage)
            }
            try await run.setCursor(key, to: Cursor(since: max(until - window.overlap, window.oldest)).stored)
            return
        }
    }
}

/// A poll's targets (each app, environment or site) read one after another: one target's trouble
/// (a refused key, a rate limit) does not stop the others; the run then fails naming them all,
/// and waits as long as the longest `Retry-After` any of them was given.
public enum PollTargets {
    /// What one target's failure tells the operator, and how long the store asked to be left alone.
    public struct Problem: Sendable {
        public let message: String
        public let retryAfter: Duration?

        public init(_ message: String, retryAfter: Duration? = nil) {
            self.message = message
            self.retryAfter = retryAfter
        }
    }

    /// The run's failure: every target that could not be read.
    public struct Failures: StoreAskedToWait, CustomStringConvertible {
        public let subject: String
        public let problems: [String]
        public let retryAfter: Duration?
        public var description: String { "\(subject) not read for " + problems.joined(separator: "; ") }
    }

    /// Each owner with what its sealed settings give access to; an owner whose settings do not (none
    /// stored, one refused) is a problem known before any read, naming the settings to fix.
    public static func access<Access>(
        of owners: [ClientWithStoreCredentials],
        _ read: (ClientWithStoreCredentials) throws(StoreAPIError) -> Access
    ) -> (targets: [(owner: ClientWithStoreCredentials, access: Access)], known: [Problem]) {
        var targets: [(owner: ClientWithStoreCredentials, access: Access)] = [], known: [Problem] = []
        for owner in owners {
            do { targets.append((owner, try read(owner))) } catch {
                known.append(Problem("client \(owner.client.clientID): \(error.operatorHelp)"))
            }
        }
        return (targets, known)
    }

    /// Polls each target; `problem` says which failures are one target's (nil: the run stops, as
    /// when this process lost the poll's lease). `known` are problems found before any was read.
    public static func each<Target>(
        _ targets: [Target], subject: String, known: [Problem] = [],
        _ poll: (Target) async throws -> Void,
        problem: (Target, any Error) -> Problem?
    ) async throws {
        var problems = known
        for target in targets {
            do { try await poll(target) } catch {
                guard let found = problem(target, error) else { throw error }
                problems.append(found)
            }
        }
        guard !problems.isEmpty else { return }
        let waits = problems.compactMap(\.retryAfter)
        throw Failures(subject: subject, problems: problems.map(\.message), retryAfter: waits.max())
    }
}
