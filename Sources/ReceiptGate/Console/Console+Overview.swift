import Foundation
import HTTPServer

extension Console {
    func overview(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let hour = verifications.lastHour()
        let sinceStart = verifications.sinceStart
        var lastHour: [VerificationTally.Series: Int] = [:]
        for minute in hour { lastHour.merge(minute.counts, uniquingKeysWith: +) }
        let byOutcome = Self.series(hour, of: Set(lastHour.keys.map(\.outcome)).sorted()) { $0.outcome }
        let byStore = Self.series(hour, of: Set(lastHour.keys.map(\.store)).sorted()) { $0.store }
        let chart =
            byOutcome.isEmpty
            ? HTML("<p class=\"empty\">No verifications in the last hour.</p>")
            : "<h3>By outcome</h3>"
                + ConsoleChart.lines(
                    id: "by-outcome", title: "Verifications per minute over the last hour, by outcome",
                    series: byOutcome, xLabels: ("60 min ago", "30 min ago", "now"))
                + "<h3>By store</h3>"
                + ConsoleChart.lines(
                    id: "by-store", title: "Verifications per minute over the last hour, by store",
                    series: byStore, xLabels: ("60 min ago", "30 min ago", "now"))
        let rows = lastHour.keys.sorted().map { key -> HTML in
            "<tr><td class=\"store\">\(key.store)</td><td class=\"outcome\">\(key.outcome)</td><td class=\"count\">\(lastHour[key] ?? 0)</td><td class=\"total\">\(sinceStart[key] ?? 0)</td></tr>"
        }
        return ConsoleLayout.page(
            "Overview", session: session, section: "Overview",
            """
            <h1>Overview</h1>
            <h2>Verifications</h2>
            <figure id="verifications-chart">\(chart)<figcaption>Per minute, this process, as <code>receiptgate_verifications_total</code> on <code>/metrics</code> counts them.</figcaption></figure>
            \(ConsoleLayout.table(id: "verifications", caption: "Verifications in the last hour by store and outcome (and since this process started)",
                                  headings: ["Store", "Outcome", "Last hour", "Since start"], rows: rows, empty: "No verifications in the last hour."))
            <h2>Health</h2>
            \(try await health())
            <h2>Store reconciliation</h2>
            \(try await reconciliation())
            """)
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

    /// One line per name: each minute's count of the series whose `key` is that name.
    private static func series(
        _ hour: [VerificationTally.Minute], of names: [String],
        key: (VerificationTally.Series) -> String
    ) -> [(name: String, values: [Int])] {
        names.map { name in
            (name, hour.map { minute in minute.counts.filter { key($0.key) == name }.values.reduce(0, +) })
        }
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
