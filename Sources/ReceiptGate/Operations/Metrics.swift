public import Foundation
import HTTPServer
import Postgres
import Synchronization

/// Request counters and a latency histogram, rendered in the Prometheus text format (0.0.4).
/// Labels are route patterns, never raw paths, so cardinality stays bounded.
public final class Metrics: Sendable {
    /// Upper bounds in seconds.
    static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct RouteKey: Hashable { let method: String; let route: String }
    private struct Histogram {
        var buckets = [Int](repeating: 0, count: Metrics.latencyBuckets.count)
        var count = 0
        var sum = 0.0
    }

    private struct Counts {
        var requests: [RouteKey: [Int: Int]] = [:]
        var latency: [RouteKey: Histogram] = [:]
        var pollRuns: [String: (succeeded: Int, failed: Int)] = [:]
        var pollWork: [String: (pages: Int, reread: Int, changed: Int)] = [:]
        /// Refund answers sent by store and preference; deadlines missed by store.
        var refundAnswers: [String: Int] = [:]
        var refundDeadlinesMissed: [String: Int] = [:]
        var pollNotifications: [String: (new: Int, known: Int)] = [:]
        /// Reports of purchases made outside a store's billing, by store, kind and outcome.
        var externalPurchaseReports: [String: Int] = [:]
    }

    private let counts = Mutex(Counts())
    /// The service's clock.
    let now: @Sendable () -> Date
    private let started: Date

    public init(now: @escaping @Sendable () -> Date) {
        self.now = now
        started = now()
    }

    public func record(method: String, route: String, status: Int, seconds: Double) {
        let key = RouteKey(method: method, route: route)
        counts.withLock { counts in
            counts.requests[key, default: [:]][status, default: 0] += 1
            var histogram = counts.latency[key] ?? Histogram()
            for (index, bound) in Self.latencyBuckets.enumerated() where seconds <= bound {
                histogram.buckets[index] += 1
            }
            histogram.count += 1
            histogram.sum += seconds
            counts.latency[key] = histogram
        }
    }

    /// A store poll run: whether it failed, how many notifications it found and how many of
    /// those were new (no push had delivered them), the subscriptions it read back and the
    /// changes it made. Poll names are the providers' own and the core's, so few.
    func recordPollRun(poll: String, failed: Bool, tally: PollTally) {
        counts.withLock { counts in
            var runs = counts.pollRuns[poll] ?? (0, 0)
            if failed { runs.failed += 1 } else { runs.succeeded += 1 }
            counts.pollRuns[poll] = runs
            var seen = counts.pollNotifications[poll] ?? (0, 0)
            seen.new += tally.new
            seen.known += tally.found - tally.new
            counts.pollNotifications[poll] = seen
            var work = counts.pollWork[poll] ?? (0, 0, 0)
            work.pages += tally.pages
            work.reread += tally.reread
            work.changed += tally.changed
            counts.pollWork[poll] = work
        }
    }

    func recordRefundAnswer(store: String, preference: String) {
        counts.withLock {
            $0.refundAnswers["store=\(Self.quote(store)),preference=\(Self.quote(preference))", default: 0] += 1
        }
    }

    func recordRefundDeadlineMissed(store: String) {
        counts.withLock { $0.refundDeadlinesMissed["store=\(Self.quote(store))", default: 0] += 1 }
    }

    /// A report of a purchase made outside a store's billing sent: `accepted`, `refused` (for
    /// good) or `failed` (tried again later).
    func recordExternalPurchaseReport(store: String, kind: String, outcome: String) {
        counts.withLock {
            $0.externalPurchaseReports[
                "store=\(Self.quote(store)),kind=\(Self.quote(kind)),outcome=\(Self.quote(outcome))", default: 0] += 1
        }
    }

    func renderExternalPurchaseReports() -> String {
        let reports = counts.withLock { $0.externalPurchaseReports }
        var out =
            "# HELP receiptgate_external_purchase_reports_total Reports of purchases made outside a store's billing this process sent, by outcome.\n"
        out += "# TYPE receiptgate_external_purchase_reports_total counter\n"
        for (labels, count) in reports.sorted(by: { $0.key < $1.key }) {
            out += "receiptgate_external_purchase_reports_total{\(labels)} \(count)\n"
        }
        return out
    }

    /// Store names come from registrations and preferences from a fixed set: few labels.
    func renderRefunds() -> String {
        let (answers, missed) = counts.withLock { ($0.refundAnswers, $0.refundDeadlinesMissed) }
        var out =
            "# HELP receiptgate_refund_answers_total Answers to stores' refund requests this process sent, by preference.\n"
        out += "# TYPE receiptgate_refund_answers_total counter\n"
        for (labels, count) in answers.sorted(by: { $0.key < $1.key }) {
            out += "receiptgate_refund_answers_total{\(labels)} \(count)\n"
        }
        out +=
            "# HELP receiptgate_refund_deadlines_missed_total Refund requests this process found unanswered at their deadline.\n"
        out += "# TYPE receiptgate_refund_deadlines_missed_total counter\n"
        for (labels, count) in missed.sorted(by: { $0.key < $1.key }) {
            out += "receiptgate_refund_deadlines_missed_total{\(labels)} \(count)\n"
        }
        return out
    }

    private func renderPolls() -> String {
        let (runs, seen, work) = counts.withLock { ($0.pollRuns, $0.pollNotifications, $0.pollWork) }
        guard !runs.isEmpty else { return "" }
        var out =
            "# HELP receiptgate_store_poll_runs_total Store poll runs (notification history, voided purchases) by outcome.\n"
        out += "# TYPE receiptgate_store_poll_runs_total counter\n"
        for (poll, count) in runs.sorted(by: { $0.key < $1.key }) {
            out +=
                "receiptgate_store_poll_runs_total{poll=\(Self.quote(poll)),outcome=\"succeeded\"} \(count.succeeded)\n"
            out += "receiptgate_store_poll_runs_total{poll=\(Self.quote(poll)),outcome=\"failed\"} \(count.failed)\n"
        }
        out +=
            "# HELP receiptgate_store_poll_notifications_total Notifications store polls found: new (no push had delivered them) or known.\n"
        out += "# TYPE receiptgate_store_poll_notifications_total counter\n"
        for (poll, count) in seen.sorted(by: { $0.key < $1.key }) {
            out += "receiptgate_store_poll_notifications_total{poll=\(Self.quote(poll)),result=\"new\"} \(count.new)\n"
            out +=
                "receiptgate_store_poll_notifications_total{poll=\(Self.quote(poll)),result=\"known\"} \(count.known)\n"
        }
        let totals: [(name: String, help: String, value: ((pages: Int, reread: Int, changed: Int)) -> Int)] = [
            ("receiptgate_store_poll_pages_total", "Pages store polls read from the stores.", { $0.pages }),
            (
                "receiptgate_store_poll_subscriptions_reread_total",
                "Subscriptions read back from their stores after going quiet.", { $0.reread }
            ),
            (
                "receiptgate_store_poll_changes_total",
                "Changes of the ledger's state store polls made (each told by a webhook).", { $0.changed }
            ),
        ]
        for total in totals {
            out += "# HELP \(total.name) \(total.help)\n# TYPE \(total.name) counter\n"
            for (poll, count) in work.sorted(by: { $0.key < $1.key }) {
                out += "\(total.name){poll=\(Self.quote(poll))} \(total.value(count))\n"
            }
        }
        return out
    }

    func render(
        pool: PostgresPool.Statistics?, inFlight: Int?, groupCommit: RecordBatcher.Counts? = nil,
        clientCache: ClientCache.Status? = nil, verifications: VerificationTally? = nil
    ) -> String {
        let (requests, latency) = counts.withLock { ($0.requests, $0.latency) }
        var out = ""
        out += "# HELP receiptgate_http_requests_total HTTP requests by route and status.\n"
        out += "# TYPE receiptgate_http_requests_total counter\n"
        for (key, statuses) in requests.sorted(by: { Self.order($0.key, $1.key) }) {
            for (status, count) in statuses.sorted(by: { $0.key < $1.key }) {
                out +=
                    "receiptgate_http_requests_total{method=\(Self.quote(key.method)),route=\(Self.quote(key.route)),status=\"\(status)\"} \(count)\n"
            }
        }
        out += "# HELP receiptgate_http_request_duration_seconds Time from request received to response ready.\n"
        out += "# TYPE receiptgate_http_request_duration_seconds histogram\n"
        for (key, histogram) in latency.sorted(by: { Self.order($0.key, $1.key) }) {
            let labels = "method=\(Self.quote(key.method)),route=\(Self.quote(key.route))"
            for (index, bound) in Self.latencyBuckets.enumerated() {
                out +=
                    "receiptgate_http_request_duration_seconds_bucket{\(labels),le=\"\(bound)\"} \(histogram.buckets[index])\n"
            }
            out += "receiptgate_http_request_duration_seconds_bucket{\(labels),le=\"+Inf\"} \(histogram.count)\n"
            out += "receiptgate_http_request_duration_seconds_sum{\(labels)} \(histogram.sum)\n"
            out += "receiptgate_http_request_duration_seconds_count{\(labels)} \(histogram.count)\n"
        }
        if let verifications { out += verifications.renderPrometheus() }
        out += renderPolls()
        if let pool {
            out += "# HELP receiptgate_db_pool_connections Database pool connections by state.\n"
            out += "# TYPE receiptgate_db_pool_connections gauge\n"
            out += "receiptgate_db_pool_connections{state=\"in_use\"} \(pool.inUse)\n"
            out += "receiptgate_db_pool_connections{state=\"idle\"} \(pool.idle)\n"
        }
        if let inFlight {
            out += "# HELP receiptgate_http_requests_in_flight Requests being handled now.\n"
            out += "# TYPE receiptgate_http_requests_in_flight gauge\n"
            out += "receiptgate_http_requests_in_flight \(inFlight)\n"
        }
        if let groupCommit {
            out +=
                "# HELP receiptgate_group_commit_verifications_total Verifications the group-commit batcher answered (settled) or found with a changed client (stale).\n"
            out += "# TYPE receiptgate_group_commit_verifications_total counter\n"
            out += "receiptgate_group_commit_verifications_total{result=\"settled\"} \(groupCommit.settled)\n"
            out += "receiptgate_group_commit_verifications_total{result=\"stale\"} \(groupCommit.stale)\n"
        }
        if let clientCache {
            out +=
                "# HELP receiptgate_client_cache_listening 1 while the client cache hears every client change (LISTEN connected); 0 while clients are read from the database.\n"
            out += "# TYPE receiptgate_client_cache_listening gauge\n"
            out += "receiptgate_client_cache_listening \(clientCache.listening ? 1 : 0)\n"
            out +=
                "# HELP receiptgate_client_cache_changes_heard_total Client changes (from any process or the CLI) the client cache was told of.\n"
            out += "# TYPE receiptgate_client_cache_changes_heard_total counter\n"
            out += "receiptgate_client_cache_changes_heard_total \(clientCache.changesHeard)\n"
        }
        out += "# HELP receiptgate_uptime_seconds Seconds since the process started serving.\n"
        out += "# TYPE receiptgate_uptime_seconds gauge\n"
        out += "receiptgate_uptime_seconds \(Int(now().timeIntervalSince(started)))\n"
        return out
    }

    private static func order(_ a: RouteKey, _ b: RouteKey) -> Bool { (a.route, a.method) < (b.route, b.method) }

    static func quote(_ value: String) -> String {
        "\""
            + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
