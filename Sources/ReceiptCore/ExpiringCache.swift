public import Foundation

/// Values that expire, each fetched once however many callers ask for it at once: the first
/// starts the fetch, the others await the same one (an access token, a signing certificate). A
/// refusal the owner chooses (`remembersFailure`) is remembered for `failureLifetime` and answered
/// from memory meanwhile, so a flood of requests for something misconfigured costs one fetch.
/// Time comes from the injected clock; at most `maxEntries` values (and `maxFailures` failures)
/// are kept, the soonest to expire making way, and at most `maxFetches` run at once. A fetch is not
/// the caller's child: a caller that gives up does not cancel what others wait for.
public actor ExpiringCache<Key: Hashable & Sendable, Value: Sendable> {
    private struct Entry {
        let value: Value
        let usableUntil: Date
    }

    private let now: @Sendable () -> Date
    private let failureLifetime: TimeInterval
    private let remembersFailure: @Sendable (any Error) -> Bool
    private let maxEntries: Int
    private let maxFailures: Int
    /// At most this many fetches at once: a caller that would start another gets `busy()` at once.
    private let maxFetches: Int
    private let busy: @Sendable () -> any Error
    private var entries: [Key: Entry] = [:]
    private var failures: [Key: (error: any Error, until: Date)] = [:]
    private var running: [Key: Task<Entry, any Error>] = [:]
    /// How many fetches were started, and how many callers awaited one already running (tests
    /// count them).
    public private(set) var fetches = 0
    public private(set) var joins = 0

    public init(
        now: @escaping @Sendable () -> Date = { Date() }, maxEntries: Int = 10_000, failureLifetime: TimeInterval = 0,
        maxFailures: Int? = nil, maxFetches: Int = .max,
        busy: @escaping @Sendable () -> any Error = { CancellationError() },
        remembersFailure: @escaping @Sendable (any Error) -> Bool = { _ in false }
    ) {
        self.now = now
        self.maxEntries = maxEntries
        self.maxFailures = maxFailures ?? maxEntries
        self.failureLifetime = failureLifetime
        self.maxFetches = max(1, maxFetches)
        self.busy = busy
        self.remembersFailure = remembersFailure
    }

    /// The value for `key`: remembered while usable, else fetched once for every caller waiting.
    /// `fetch` returns the value and until when it may be used (its expiry less a margin).
    public func value(
        for key: Key, fetch: @escaping @Sendable () async throws -> (Value, usableUntil: Date)
    ) async throws -> Value {
        if let entry = entries[key], entry.usableUntil > now() { return entry.value }
        if let failure = failures[key] {
            if failure.until > now() { throw failure.error }
            failures[key] = nil
        }
        if let fetching = running[key] {
            joins += 1
            return try await fetching.value.value
        }
        guard running.count < maxFetches else { throw busy() }
        fetches += 1
        // Detached: the fetch serves every caller waiting, so it carries none of the first one's
        // task-locals (its deadline) and is not cancelled with it. Its outcome is filed before
        // anyone is given it, so a caller that finds the value bad can always invalidate it.
        let task = Task.detached { [self] () async throws -> Entry in
            do {
                let (value, until) = try await fetch()
                let entry = Entry(value: value, usableUntil: until)
                await file(key, .success(entry))
                return entry
            } catch {
                await file(key, .failure(error))
                throw error
            }
        }
        running[key] = task
        return try await task.value.value
    }

    /// Files a fetch's outcome: its value kept (the soonest to expire making room), or a failure
    /// the owner chose remembered for a while.
    private func file(_ key: Key, _ outcome: Result<Entry, any Error>) {
        running[key] = nil
        switch outcome {
        case .success(let entry):
            if entries.count >= maxEntries, entries[key] == nil,
                let soonest = entries.min(by: { $0.value.usableUntil < $1.value.usableUntil })?.key
            {
                entries[soonest] = nil
            }
            entries[key] = entry
        case .failure(let error):
            guard failureLifetime > 0, remembersFailure(error) else { return }
            if failures.count >= maxFailures, failures[key] == nil,
                let soonest = failures.min(by: { $0.value.until < $1.value.until })?.key
            {
                failures[soonest] = nil
            }
            failures[key] = (error, now().addingTimeInterval(failureLifetime))
        }
    }

    /// Keeps `key`'s value until `until` if `matches` says it is one worth keeping that long: a
    /// value fetched as usable for no time (one that may answer only those who waited for it)
    /// answers later callers once its owner vouches for it.
    public func keep(_ key: Key, until: Date, if matches: @Sendable (Value) -> Bool) {
        if let entry = entries[key], matches(entry.value) {
            entries[key] = Entry(value: entry.value, usableUntil: until)
        }
    }

    /// Forgets `key`'s value if `matches` says it is the one a caller found bad (a token the
    /// server refused); a newer one another caller fetched meanwhile is kept.
    public func invalidate(_ key: Key, if matches: @Sendable (Value) -> Bool) {
        if let entry = entries[key], matches(entry.value) { entries[key] = nil }
    }
}
