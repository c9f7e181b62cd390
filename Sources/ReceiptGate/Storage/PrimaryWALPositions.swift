import Postgres
import Synchronization

/// Where the primary's write-ahead log stood at recent moments, sampled a few times per read bound
/// on a connection of its own (so a busy pool never delays a sample).
///
/// Why: a standby's own view of its lag (replay behind receive, the age of the last replayed
/// transaction) cannot see WAL it has not received yet, and an asynchronous standby on a stalled
/// link has received nothing for up to `wal_receiver_timeout`. The primary's position taken at or
/// after `now - bound` covers every commit acknowledged before then; a standby that has replayed
/// up to it serves a read stale by at most the bound. The flush position, not the write position:
/// a standby is sent only flushed WAL, and an acknowledged commit is flushed.
final class PrimaryWALPositions: Sendable {
    struct Sample: Sendable {
        /// Taken just before the position was asked: every commit acknowledged before it is at or
        /// below `position`.
        let at: ContinuousClock.Instant
        let position: String
    }

    let bound: Duration
    let interval: Duration
    private let pool: PostgresPool
    private let samples = Mutex<[Sample]>([])
    private let sampler = Mutex<Task<Void, Never>?>(nil)

    init(primaryConnectionString: String, bound: Duration) {
        self.bound = bound
        // Four samples per bound, and never a busy loop for a tiny bound.
        interval = max(bound / 4, .milliseconds(20))
        var configuration = PostgresPool.Configuration(connectionString: primaryConnectionString, size: 1)
        configuration.connectTimeoutSeconds = 2
        configuration.statementTimeoutMilliseconds = 2_000
        configuration.leaseTimeout = .seconds(5)
        pool = PostgresPool(configuration)
    }

    /// The position a standby must have replayed for a read now to be within the bound; nil when
    /// no sample that recent exists (the primary not answering, or sampling just started).
    func requiredPosition(now: ContinuousClock.Instant = .now) -> String? {
        let since = now - bound
        return samples.withLock { samples in samples.first { $0.at >= since }?.position }
    }

    func record(_ sample: Sample) {
        samples.withLock { samples in
            samples.append(sample)
            // Only samples younger than the bound are ever asked for.
            let since = sample.at - bound - interval
            if let keep = samples.firstIndex(where: { $0.at >= since }), keep > 0 { samples.removeFirst(keep) }
        }
    }

    func start() {
        let task = Task { [self] in
            while !Task.isCancelled {
                let at = ContinuousClock.now
                if let position = try? await pool.query("SELECT pg_current_wal_flush_lsn()::text AS position").first?
                    .decode("position", as: String.self)
                {
                    record(Sample(at: at, position: position))
                }
                try? await Task.sleep(until: at + interval)
            }
        }
        sampler.withLock { $0 = task }
    }

    func stop() async {
        let task = sampler.withLock { sampler -> Task<Void, Never>? in
            defer { sampler = nil }
            return sampler
        }
        task?.cancel()
        await task?.value
        pool.shutdown()
    }
}
