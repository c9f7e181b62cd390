import Foundation
import HTTPServer

extension Console {
    func overview(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let analytics = AnalyticsQueries(pool: queries.pool)
        let now = now()
        // Sixty whole minutes, this one included, counted from the attempts table: every process's
        // verifications, and the same after a restart.
        let thisMinute = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 60).rounded(.down) * 60)
        let minutes = (0..<60).map { thisMinute.addingTimeInterval(Double($0 - 59) * 60) }
        let labels = minutes.map { Self.minuteName($0) }
        let minuteRows = try await analytics.verifications(
            from: minutes[0], until: thisMinute.addingTimeInterval(60), clientID: nil, bucket: "minute")
        let day = try await analytics.verifications(
            from: now.addingTimeInterval(-86_400), until: thisMinute.addingTimeInterval(60), clientID: nil)
        // A store no plugin serves (a name a caller made up) is `unknown`, as on /metrics.
        let served = Set(stores.map(\.store.rawValue))
        let hour = minuteRows.map { row in
            (row.bucket, served.contains(row.store) ? row.store : "unknown", row.outcome, row.count)
        }
        .map { (bucket: $0.0, store: $0.1, outcome: $0.2, count: $0.3) }
        var lastHour: [Pair: Int] = [:], lastDay: [Pair: Int] = [:]
        for row in hour { lastHour[Pair(store: row.store, outcome: row.outcome), default: 0] += row.count }
        for row in day {
            lastDay[
                Pair(store: served.contains(row.store) ? row.store : "unknown", outcome: row.outcome), default: 0] +=
                row.count
        }
        let outcomes = Set(lastHour.keys.map(\.outcome)).sorted { Self.outcomeRank($0) < Self.outcomeRank($1) }
        let stores = Set(lastHour.keys.map(\.store)).sorted()
        func perMinute(_ matches: (String, String) -> Bool) -> [Int] {
            labels.map { label in
                hour.filter { $0.bucket == label && matches($0.store, $0.outcome) }.reduce(0) { $0 + $1.count }
            }
        }
        let byOutcome = zip(outcomes, Tone.outcomes(outcomes)).map { outcome, tone in
            ConsoleChart.Series(name: outcome, values: perMinute { _, candidate in candidate == outcome }, tone: tone)
        }
        let byStore = zip(stores, Tone.categories(stores.count)).map { store, tone in
            ConsoleChart.Series(name: store, values: perMinute { candidate, _ in candidate == store }, tone: tone)
        }
        let chart =
            byOutcome.isEmpty
            ? HTML("<p class=\"empty\">No verifications in the last hour.</p>")
            : "<h3>By outcome</h3>"
                + ConsoleChart.bars(
                    id: "by-outcome", title: "Verifications per minute over the last hour, by outcome", points: labels,
                    series: byOutcome, xLabels: ("60 min ago", "30 min ago", "now"))
                + "<h3>By store</h3>"
                + ConsoleChart.lines(
                    id: "by-store", title: "Verifications per minute over the last hour, by store",
                    series: byStore, xLabels: ("60 min ago", "30 min ago", "now"))
        let rows = Set(lastHour.keys).union(lastDay.keys).sorted().map { key -> HTML in
            "<tr><td class=\"store\">\(key.store)</td><td class=\"outcome\">\(key.outcome)</td><td class=\"count\">\(lastHour[key] ?? 0)</td><td class=\"day count\">\(lastDay[key] ?? 0)</td></tr>"
        }
        // A week: the headline stays quick on a big ledger (the analytics page reads longer ranges).
        let report = try await analytics.report(.lastDays(7, now: now), now: now)
        return ConsoleLayout.page(
            "Overview", session: session, section: "Overview",
            """
            <h1>Overview</h1>
            <h2>The last 7 days in production</h2>
            \(AnalyticsView(report: report, names: ClientNames(try await clients.list())).headline)
            <p><a href="/console/analytics?range=7">Analytics: sales, refunds, subscriptions and verifications by day</a></p>
            <h2>Verifications</h2>
            <figure id="verifications-chart">\(chart)<figcaption>Per minute, every process, from the ledger's verification attempts (the outcomes <code>receiptgate_verifications_total</code> on <code>/metrics</code> counts).</figcaption></figure>
            \(ConsoleLayout.table(id: "verifications", caption: "Verifications in the last hour and the last 24 hours by store and outcome",
                                  headings: ["Store", "Outcome", "Last hour", "Last 24 h"], rows: rows, empty: "No verifications in the last 24 hours."))
            <h2>Health</h2>
            \(try await health())
            <h2>Store reconciliation</h2>
            \(try await reconciliation())
            """)
    }

    private struct Pair: Hashable, Comparable {
        let store: String, outcome: String
        static func < (a: Pair, b: Pair) -> Bool { (a.store, a.outcome) < (b.store, b.outcome) }
    }

    /// A minute as the attempts query names it: `2026-11-30 12:34`, UTC.
    static func minuteName(_ date: Date) -> String {
        String(Timestamps.iso8601(date).prefix(16)).replacingOccurrences(of: "T", with: " ")
    }

    /// Passed first, then duplicates, store errors, then refusals by name.
    static func outcomeRank(_ outcome: String) -> String {
        switch outcome {
        case "verified": "0"
        case "duplicate": "1"
        case "store_error": "2"
        default: "3" + outcome
        }
    }

    /// The latest store poll runs (notification history, voided purchases, quiet subscriptions
    /// read back), and what each caught that no push had delivered.
    private func reconciliation() async throws -> HTML {
        let runs = try await PollRepository(pool: queries.pool).recentRuns(limit: 10)
        let rows = runs.map { run -> HTML in
            let seconds = String(format: "%.1f s", run.finishedAt.timeIntervalSince(run.startedAt))
            let poll = run.byHand ? "\(run.poll) (by hand)" : run.poll, tally = run.tally
            return
                "<tr><td class=\"poll\">\(poll)</td><td class=\"started\">\(ConsoleTime.show(run.startedAt))</td><td class=\"took\">\(seconds)</td><td class=\"pages\">\(tally.pages)</td><td class=\"found\">\(tally.found)</td><td class=\"new\">\(tally.new)</td><td class=\"reread\">\(tally.reread)</td><td class=\"changed\">\(tally.changed)</td><td class=\"error\">\(run.error ?? "")</td></tr>"
        }
        return ConsoleLayout.table(
            id: "store-poll-runs",
            caption:
                "The last runs that read back what stores keep (every process), newest first; \"new\" is what no push had delivered, \"changed\" what moved the ledger",
            headings: ["Poll", "Started", "Took", "Pages", "Found", "New", "Re-read", "Changed", "Error"], rows: rows,
            empty: "No store poll has run yet.")
    }

    private func health() async throws -> HTML {
        let backlog = try await queries.backlog()
        let pool = database.poolStatistics
        let ready = await OperationalRoutes.isReady(database)
        return ConsoleLayout.details(
            id: "health",
            [
                ("Webhooks and mail waiting (outbox)", String(backlog.pending), "outbox-pending"),
                ("Failed deliveries", String(backlog.failed), "outbox-failed"),
                (
                    "Oldest waiting since", backlog.oldestPending.map(ConsoleTime.show) ?? "none",
                    "outbox-oldest-pending"
                ),
                ("Refunds in the last 24 h", String(backlog.refundsLastDay), "refunds-24h"),
                ("Database connections in use", String(pool.inUse), "pool-in-use"),
                ("Database connections idle", String(pool.idle), "pool-idle"),
                ("Readiness", ready ? "ready" : "not ready", "readiness"),
            ])
    }
}
