import Foundation
import Postgres
import ReceiptCore
import Synchronization

/// Entitlement reads, the service's most frequent call, answered in groups: the reads waiting at
/// one moment share one prepared statement on one connection (and, on the read standby, one lag
/// check), so Postgres pays its per-statement cost once per group instead of once per read. A lone
/// read goes at once; groups form only from what queues while earlier ones are in flight.
final class EntitlementReadBatcher: Sendable {
    private struct Item {
        let clientID: String
        let playerID: String
        let continuation: CheckedContinuation<[EntitlementGrant], any Error>
    }

    private struct Waiting {
        var queue: [Item] = []
        var inFlight = 0
    }

    let reads: LedgerReads
    /// Groups in flight at once (each holds one connection while it runs).
    let maxInFlight: Int
    let maxBatch: Int
    private let waiting = Mutex(Waiting())

    init(reads: LedgerReads, maxInFlight: Int = 2, maxBatch: Int = 64) {
        self.reads = reads
        self.maxInFlight = maxInFlight
        self.maxBatch = maxBatch
    }

    /// The rows `player_entitlements` holds for the player under the client's catalog, by name.
    func rows(client clientID: String, player playerID: String) async throws -> [EntitlementGrant] {
        try await withCheckedThrowingContinuation { continuation in
            let start = waiting.withLock { waiting -> Bool in
                waiting.queue.append(Item(clientID: clientID, playerID: playerID, continuation: continuation))
                guard waiting.inFlight < maxInFlight else { return false }
                waiting.inFlight += 1
                return true
            }
            if start { launch() }
        }
    }

    /// One pool job that takes groups until the queue is empty: on the standby while it is fresh
    /// enough (a group it cannot serve goes to the primary), else on the primary.
    private func launch() {
        let pool = reads.standby ?? reads.primary
        let onStandby = reads.standby != nil
        let accepted = pool.submit { [self] connection in
            while let batch = nextBatch() {
                guard case .success(let connection) = connection else {
                    if onStandby {
                        reads.counts.failed.add(batch.count, ordering: .relaxed)
                        onPrimary(batch)
                    } else if case .failure(let error) = connection {
                        batch.forEach { $0.continuation.resume(throwing: error) }
                    }
                    continue
                }
                if onStandby {
                    switch reads.standbyIsFresh(connection) {
                    case .fresh: break
                    case .lagging:
                        reads.count(.lagging, batch.count)
                        onPrimary(batch)
                        continue
                    case .notStandby:
                        reads.count(.notStandby, batch.count)
                        onPrimary(batch)
                        // A connection retired for it is replaced once this job ends.
                        if connection.retired { return launch() }
                        continue
                    case .failed:
                        reads.counts.failed.add(batch.count, ordering: .relaxed)
                        onPrimary(batch)
                        return launch()  // this connection is given up; a new job takes its place
                    }
                }
                guard run(batch, on: connection, failOnError: !onStandby) else {
                    reads.counts.failed.add(batch.count, ordering: .relaxed)
                    onPrimary(batch)
                    return launch()
                }
                if onStandby { reads.counts.standby.add(batch.count, ordering: .relaxed) }
            }
        }
        if !accepted { strand(PostgresError(.poolClosed, "the database pool is shut down")) }
    }

    /// A group the standby could not serve, read on the primary; when the primary cannot be
    /// reached either (a failover under way), on the standby whatever its lag.
    private func onPrimary(_ batch: [Item]) {
        let fallback = reads.standby != nil
        let accepted = reads.primary.submit { [self] connection in
            switch connection {
            case .success(let connection):
                if run(batch, on: connection, failOnError: !fallback) { return }
            case .failure(let error):
                guard fallback, DatabaseOutage.matches(error) else {
                    return batch.forEach { $0.continuation.resume(throwing: error) }
                }
            }
            onStandbyWithoutPrimary(batch)
        }
        if !accepted {
            batch.forEach {
                $0.continuation.resume(throwing: PostgresError(.poolClosed, "the database pool is shut down"))
            }
        }
    }

    private func onStandbyWithoutPrimary(_ batch: [Item]) {
        guard let standby = reads.standby else { return }
        let accepted = standby.submit { [self] connection in
            switch connection {
            case .success(let connection):
                _ = run(batch, on: connection, failOnError: true)
                reads.counts.primaryUnavailable.add(batch.count, ordering: .relaxed)
            case .failure(let error): batch.forEach { $0.continuation.resume(throwing: error) }
            }
        }
        if !accepted {
            batch.forEach {
                $0.continuation.resume(throwing: PostgresError(.poolClosed, "the database pool is shut down"))
            }
        }
    }

    private func strand(_ error: any Error) {
        let stranded = waiting.withLock { waiting -> [Item] in
            defer { waiting.queue.removeAll(); waiting.inFlight = 0 }
            return waiting.queue
        }
        stranded.forEach { $0.continuation.resume(throwing: error) }
    }

    private func nextBatch() -> [Item]? {
        waiting.withLock { waiting in
            guard !waiting.queue.isEmpty else {
                waiting.inFlight -= 1
                return nil
            }
            let count = min(maxBatch, waiting.queue.count)
            defer { waiting.queue.removeFirst(count) }
            return Array(waiting.queue.prefix(count))
        }
    }

    /// Reads the group's rows and answers each read; false when the statement failed and
    /// `failOnError` is off (the caller reads the group elsewhere).
    private func run(_ batch: [Item], on connection: PostgresConnection, failOnError: Bool) -> Bool {
        let rows: [PostgresRow]
        do {
            // Prepared once per connection: the text never changes (two array parameters).
            rows = try connection.query(Self.statement(batch), preparedAs: "receiptgate_entitlement_reads")
        } catch {
            guard failOnError else { return false }
            batch.forEach { $0.continuation.resume(throwing: error) }
            return true
        }
        var grants = [[EntitlementGrant]](repeating: [], count: batch.count)
        do {
            for row in rows {
                let ordinal = try row.decode("ord", as: Int.self) - 1
                if grants.indices.contains(ordinal) { grants[ordinal].append(try EntitlementRows.grant(row)) }
            }
        } catch {
            batch.forEach { $0.continuation.resume(throwing: error) }
            return true
        }
        for (index, item) in batch.enumerated() { item.continuation.resume(returning: grants[index]) }
        return true
    }

    private static func statement(_ batch: [Item]) -> PostgresQuery {
        """
        SELECT k.ord::int AS ord, \(unescaped: EntitlementRows.columns(of: "pe"))
        FROM unnest(\(batch.map(\.clientID))::text[], \(batch.map(\.playerID))::text[]) WITH ORDINALITY AS k(client_id, player_id, ord)
        JOIN player_entitlements pe ON pe.client_id = k.client_id AND pe.player_id = k.player_id
        ORDER BY k.ord, pe.entitlement
        """
    }
}
