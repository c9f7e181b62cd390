import Foundation
import ReceiptCore

/// The game's consumption reports, one per transaction: the one with the latest time of its own
/// stands. The order is decided by the upsert's condition, not by reading first, so two reports
/// racing each other, or a replayed older one, cannot leave the older in place of the newer.
extension TransactionRepository {
    /// A report as stored: the one that stands for the transaction.
    struct StoredConsumption: Sendable {
        let report: ConsumptionReport
        /// The report's own time in epoch milliseconds (see `keepConsumption`).
        let asOfMs: Int64
        /// When the service received it.
        let receivedAt: Date
        /// False when a report of a later time (or another report of the same time) was already
        /// stored: this one was not kept, and `report` is the one that stands.
        let kept: Bool
    }

    /// Keeps `report`, whose own time is `asOfMs`, unless the stored report's time is the same or
    /// later. The same report sent again (same time, same content) counts as kept: a retry.
    func keepConsumption(
        _ report: ConsumptionReport, asOfMs: Int64, transactionRowID: Int64
    ) async throws -> StoredConsumption {
        let events = try ConsumptionReports.json(report.usageEvents)
        if let row = try await pool.query(
            """
            INSERT INTO consumption_reports (transaction_row_id, delivered, consumed_milliunits, usage_events, as_of_ms)
            VALUES (\(transactionRowID), \(report.delivered), \(report.consumedMilliunits), \(events)::jsonb, \(asOfMs))
            ON CONFLICT (transaction_row_id) DO UPDATE SET delivered = EXCLUDED.delivered, consumed_milliunits = EXCLUDED.consumed_milliunits,
                usage_events = EXCLUDED.usage_events, as_of_ms = EXCLUDED.as_of_ms, reported_at = now()
            WHERE consumption_reports.as_of_ms < EXCLUDED.as_of_ms
            RETURNING reported_at
            """
        ).first {
            return StoredConsumption(
                report: report, asOfMs: asOfMs, receivedAt: try row.decode("reported_at"), kept: true)
        }
        // Not written: a report of the same time or later stands. A separate statement, so it sees
        // a report another transaction committed while the upsert waited for it.
        guard
            let row = try await pool.query(
                """
                SELECT delivered, consumed_milliunits, usage_events::text AS usage_events, as_of_ms, reported_at,
                       (as_of_ms = \(asOfMs) AND delivered = \(report.delivered)
                        AND consumed_milliunits IS NOT DISTINCT FROM \(report.consumedMilliunits)
                        AND usage_events = \(events)::jsonb) AS same
                FROM consumption_reports WHERE transaction_row_id = \(transactionRowID)
                """
            ).first
        else {
            throw ConsumptionReportVanished()
        }
        let standing = ConsumptionReport(
            delivered: try row.decode("delivered"), consumedMilliunits: try row.decode("consumed_milliunits"),
            usageEvents: try ConsumptionReports.usageEvents(from: try row.decode("usage_events", as: String?.self)))
        return StoredConsumption(
            report: standing, asOfMs: try row.decode("as_of_ms"), receivedAt: try row.decode("reported_at"),
            kept: try row.decode("same"))
    }
}

/// A report row that the upsert found in conflict was gone when read back: reports are never
/// deleted while their transaction exists, so this is a defect, answered as a retryable failure.
struct ConsumptionReportVanished: Error, CustomStringConvertible {
    var description: String { "the stored consumption report could not be read back" }
}
