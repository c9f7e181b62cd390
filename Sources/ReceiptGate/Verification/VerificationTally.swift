import Foundation
import Synchronization

/// Verifications counted by store and outcome: since start for `/metrics`, and per minute over
/// the last hour for the console's chart. Both are fed by the one `record` call, so the chart and
/// Prometheus count the same thing.
///
/// Outcomes: `verified`, `duplicate`, `store_error` (the store could not be asked or answered
/// wrongly), `refused:<REASON>` (the evidence was refused, with the pipeline's reason). Labels are
/// bounded: a store the service does not serve counts as `unknown`, and once `maximumSeries`
/// pairs exist a new refusal reason counts as `refused:OTHER`.
public final class VerificationTally: Sendable {
    public struct Series: Hashable, Sendable, Comparable {
        public let store: String
        public let outcome: String

        public static func < (a: Series, b: Series) -> Bool { (a.store, a.outcome) < (b.store, b.outcome) }
    }

    /// One minute's counts; `minute` is minutes since 1970.
    public struct Minute: Sendable {
        public let minute: Int
        public var counts: [Series: Int]
    }

    static let maximumSeries = 256
    static let minutesKept = 60

    private struct Counts {
        var totals: [Series: Int] = [:]
        var minutes: [Minute] = []
    }

    private let counts = Mutex(Counts())
    private let knownStores: Set<String>
    private let now: @Sendable () -> Date

    init(stores: [String], now: @escaping @Sendable () -> Date = Date.init) {
        knownStores = Set(stores)
        self.now = now
    }

    func recordVerified(store: String, duplicate: Bool) {
        record(store: store, outcome: duplicate ? "duplicate" : "verified")
    }

    func recordRefused(store: String, storeError: Bool, reason: String) {
        record(store: store, outcome: storeError ? "store_error" : "refused:\(reason)")
    }

    private func record(store: String, outcome: String) {
        let minute = Int(now().timeIntervalSince1970 / 60)
        let store = knownStores.contains(store) ? store : "unknown"
        counts.withLock { counts in
            var series = Series(store: store, outcome: outcome)
            if counts.totals[series] == nil, counts.totals.count >= Self.maximumSeries, outcome.hasPrefix("refused:") {
                series = Series(store: series.store, outcome: "refused:OTHER")
            }
            counts.totals[series, default: 0] += 1
            if counts.minutes.last?.minute != minute {
                counts.minutes.append(Minute(minute: minute, counts: [:]))
                counts.minutes.removeAll { $0.minute <= minute - Self.minutesKept }
            }
            counts.minutes[counts.minutes.count - 1].counts[series, default: 0] += 1
        }
    }

    /// Since the process started.
    public var sinceStart: [Series: Int] { counts.withLock { $0.totals } }

    /// The last hour, oldest first, one entry per minute (minutes without a verification are empty).
    public func lastHour() -> [Minute] {
        let current = Int(now().timeIntervalSince1970 / 60)
        let kept = counts.withLock { $0.minutes }
        let byMinute = Dictionary(kept.map { ($0.minute, $0.counts) }, uniquingKeysWith: { first, _ in first })
        return ((current - Self.minutesKept + 1)...current).map { Minute(minute: $0, counts: byMinute[$0] ?? [:]) }
    }

    func renderPrometheus() -> String {
        var out =
            "# HELP receiptgate_verifications_total Verifications by store and outcome (verified, duplicate, store_error, refused:<REASON>).\n"
        out += "# TYPE receiptgate_verifications_total counter\n"
        for (series, count) in sinceStart.sorted(by: { $0.key < $1.key }) {
            out +=
                "receiptgate_verifications_total{store=\(Metrics.quote(series.store)),outcome=\(Metrics.quote(series.outcome))} \(count)\n"
        }
        return out
    }
}
