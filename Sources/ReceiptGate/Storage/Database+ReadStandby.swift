import Postgres
import Synchronization

extension Database {
    /// How far the read standby (DATABASE_READ_URL) is behind, in seconds; nil when no read
    /// standby is configured.
    func readStandbyLagSeconds() async throws -> Double? {
        guard let readPool else { return nil }
        return try await readPool.query(LedgerReads.lagQuery).first?.decode("lag", as: Double.self)
    }
}

/// Where the ledger's reads go: to the read standby (DATABASE_READ_URL) while it is at most
/// `maxLagSeconds` behind, else to the primary. "Behind" is measured against the primary: the
/// standby must have replayed the primary's WAL position sampled at most the bound ago
/// (`PrimaryWALPositions`), asked on the same standby connection just before the read, so a read
/// is never staler than the bound (plus that one round trip), whatever the standby has or has not
/// received. A standby that does not answer, or whose server is no longer in recovery (promoted
/// by a failover), is skipped too. Verification always writes to the primary.
struct LedgerReads: Sendable {
    let primary: PostgresPool
    let standby: PostgresPool?
    let maxLagSeconds: Double
    let counts: Counts
    /// The primary's recent WAL positions; with a standby only.
    let positions: PrimaryWALPositions?

    /// Reads the standby answered, and those it was skipped for (too far behind, failed, or no
    /// longer a standby).
    final class Counts: Sendable {
        let standby = Atomic<Int>(0), lagging = Atomic<Int>(0), failed = Atomic<Int>(0), notStandby = Atomic<Int>(0)
        /// Answered by the standby whatever its lag, because the primary could not be reached.
        let primaryUnavailable = Atomic<Int>(0)
    }

    init(primary: PostgresPool, standby: PostgresPool? = nil, maxLagSeconds: Double = 1) {
        self.primary = primary
        self.standby = standby
        self.maxLagSeconds = maxLagSeconds
        counts = Counts()
        positions = standby.map { _ in
            PrimaryWALPositions(
                primaryConnectionString: primary.connectionString,
                bound: .milliseconds(Int64((maxLagSeconds * 1000).rounded())))
        }
    }

    /// For `/metrics`: 0 once the standby replayed everything it received, else the age of the
    /// last transaction it replayed (so a standby that stopped replaying shows a growing lag); 0
    /// on a primary. A standby with no WAL receiver (cut off from its primary, or its primary
    /// gone) cannot know how far behind it is: infinitely. (Without `pg_read_all_stats` a role
    /// sees the receiver but not its status; a receiver that exists then counts as streaming.)
    static let lagQuery: PostgresQuery = """
        SELECT (CASE WHEN NOT pg_is_in_recovery() THEN 0
                     WHEN NOT EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status IS NULL OR status = 'streaming') THEN 'Infinity'::float8
                     WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                     ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END)::float8 AS lag
        """

    enum Freshness { case fresh, lagging, notStandby, failed }

    /// Whether the standby behind `connection` has replayed what the primary had written the bound
    /// ago (asked now, on that connection). No recent sample of the primary (it is not answering,
    /// or sampling just started) counts as lagging: the primary is asked, and when it cannot
    /// answer the standby still does. A server no longer in recovery was a standby when the
    /// connection was made and has been promoted since: reads meant to spare the primary would land
    /// on it, so they go to the primary by name and the connection is replaced after this read, so
    /// the next one finds a standby again. Not one younger than a replacement interval: a read URL
    /// that can only reach a primary is not reconnected per read.
    func standbyIsFresh(_ connection: PostgresConnection) -> Freshness {
        let required = positions?.requiredPosition()
        let check: PostgresQuery = """
            SELECT pg_is_in_recovery() AS in_recovery,
                   coalesce(pg_last_wal_replay_lsn() >= \(required)::pg_lsn, false) AS caught_up
            """
        guard let row = try? connection.query(check).first,
            let inRecovery = try? row.decode("in_recovery", as: Bool.self),
            let caughtUp = try? row.decode("caught_up", as: Bool.self)
        else { return .failed }
        guard inRecovery else {
            if ContinuousClock.now - connection.openedAt > Self.promotedConnectionLifetime { connection.retire() }
            return .notStandby
        }
        return caughtUp ? .fresh : .lagging
    }

    static let promotedConnectionLifetime: Duration = .seconds(30)

    func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        guard let standby else { return try await primary.query(query) }
        do {
            let answered: Result<[PostgresRow], Skipped> = try await standby.withConnection { [self] connection in
                switch standbyIsFresh(connection) {
                case .fresh: return .success(try connection.query(query))
                case .lagging: return .failure(.lagging)
                case .notStandby: return .failure(.notStandby)
                case .failed: throw PostgresError(.queryFailed, "the standby's position could not be read")
                }
            }
            switch answered {
            case .success(let rows):
                counts.standby.add(1, ordering: .relaxed)
                return rows
            case .failure(let skipped): count(skipped, 1)
            }
        } catch {
            counts.failed.add(1, ordering: .relaxed)
        }
        do {
            return try await primary.query(query)
        } catch  where DatabaseOutage.matches(error) {
            // No primary to read from (a failover under way): the standby's copy is the freshest there is.
            let rows = try await standby.query(query)
            counts.primaryUnavailable.add(1, ordering: .relaxed)
            return rows
        }
    }

    enum Skipped: Error { case lagging, notStandby }

    func count(_ skipped: Skipped, _ reads: Int) {
        switch skipped {
        case .lagging: counts.lagging.add(reads, ordering: .relaxed)
        case .notStandby: counts.notStandby.add(reads, ordering: .relaxed)
        }
    }

    /// `/metrics` lines: where the reads went.
    func renderMetrics() -> String {
        guard standby != nil else { return "" }
        return
            "# HELP receiptgate_ledger_reads_total Ledger reads by where they were answered: the standby, or the primary because "
            + "the standby had not replayed what the primary wrote RECEIPTGATE_READ_MAX_LAG_MS ago (lagging), failed, or was no longer a standby "
            + "(not_standby: promoted by a failover); the standby, whatever its lag, when the primary could not be reached.\n# TYPE receiptgate_ledger_reads_total counter\n"
            + "receiptgate_ledger_reads_total{served_by=\"standby\"} \(counts.standby.load(ordering: .relaxed))\n"
            + "receiptgate_ledger_reads_total{served_by=\"primary\",reason=\"lagging\"} \(counts.lagging.load(ordering: .relaxed))\n"
            + "receiptgate_ledger_reads_total{served_by=\"primary\",reason=\"standby_failed\"} \(counts.failed.load(ordering: .relaxed))\n"
            + "receiptgate_ledger_reads_total{served_by=\"primary\",reason=\"not_standby\"} \(counts.notStandby.load(ordering: .relaxed))\n"
            + "receiptgate_ledger_reads_total{served_by=\"standby\",reason=\"primary_unavailable\"} \(counts.primaryUnavailable.load(ordering: .relaxed))\n"
    }
}

extension TransactionRepository {
    /// The same reads through `reads` (the standby while it is fresh enough). Never write through it.
    func reading(via reads: LedgerReads) -> TransactionRepository {
        var repository = self
        repository.reads = reads
        return repository
    }
}
