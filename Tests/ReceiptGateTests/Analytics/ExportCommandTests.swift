import Foundation
import Postgres
import TestSupport
import Testing

/// `receiptgate export transactions`, run as the binary: CSV on standard output with a row per
/// purchase and one per refund of the range, and every mistake in its arguments a usage error.
@Suite struct ExportCommand {
    @Test func theRangesPurchasesAndRefundsComeOutAsCSV() async throws {
        let environment = try await Binary.databaseEnvironment()
        let migrated = try await Binary.run(["migrate"], environment)
        try #require(migrated.status == 0, "\(migrated.stderr)")
        let pool = PostgresPool(.init(connectionString: try #require(environment["DATABASE_URL"]), size: 1))
        defer { pool.shutdown() }
        let now = Date(timeIntervalSince1970: 1_795_089_600)  // 2026-11-19T12:00:00Z
        // Two games' rows (the secret is never read here).
        try await pool.execute(
            "INSERT INTO clients (id, name, secret_ciphertext) VALUES ('rgc_one', 'One, the game', '\\x00'), ('rgc_two', 'Two', '\\x00')"
        )
        try await AnalyticsLedger.seed(pool, client: "rgc_one", other: "rgc_two", now: now)

        let month = try await Binary.run(
            ["export", "transactions", "--since", "2026-10-21", "--until", "2026-11-20T00:00:00Z"], environment)
        #expect(month.status == 0, "\(month.stderr)")
        let lines = month.stdout.split(separator: "\r\n").map(String.init)
        let counted = try await pool.query(
            """
            SELECT (SELECT count(*) FROM transactions WHERE environment = 'production' AND purchase_date >= '2026-10-21' AND purchase_date < '2026-11-20')
                 + (SELECT count(*) FROM transactions WHERE environment = 'production' AND state = 'refunded'
                    AND revocation_date >= '2026-10-21' AND revocation_date < '2026-11-20') AS rows
            """)[0].decode("rows", as: Int.self)
        #expect(lines.count == counted + 1 && counted == 10, "\(month.stdout)")
        #expect(lines.first?.hasPrefix("type,date,store,environment,client_id,client_name,transaction_id,") == true)
        // Oldest first: the subscription bought twenty days before is the first row.
        #expect(
            lines.count > 1
                && lines[1].hasPrefix(
                    "purchase,2026-10-30T12:00:00.000Z,app_store,production,rgc_one,\"One, the game\",sub-1,sub-1,")
        )

        let one = try await Binary.run(
            ["export", "transactions", "--since", "2026-11-01", "--until", "2026-12-01", "--client", "rgc_two"],
            environment)
        #expect(one.status == 0 && one.stdout.split(separator: "\r\n").count == 2, "\(one.stdout)")
        let sandbox = try await Binary.run(
            ["export", "transactions", "--since", "2026-11-01", "--until", "2026-12-01", "--environment", "sandbox"],
            environment)
        #expect(sandbox.stdout.contains(",sandbox-1,") && !sandbox.stdout.contains(",an-1,"))

        // Rates loaded from a file replace those loaded before.
        let file = TestDatabase.temporaryDirectory("rates").appendingPathComponent("rates.csv")
        try Data("date,currency,rate\n2026-01-01,EUR,1.08\n2026-01-01,USD,1\n".utf8).write(to: file)
        let loaded = try await Binary.run(["rates", "set", "--file", file.path, "--base", "usd"], environment)
        #expect(
            loaded.status == 0 && loaded.stdout.contains(#""rates":2"#) && loaded.stdout.contains(#""base":"USD""#),
            "\(loaded)")
        try Data("2026-06-01,GBP,1.27\n".utf8).write(to: file)
        #expect(try await Binary.run(["rates", "set", "--file", file.path], environment).status == 0)
        let kept = try await pool.query("SELECT string_agg(currency || ' ' || rate, ',') AS r FROM currency_rates")[0]
            .decode("r", as: String.self)
        #expect(kept == "GBP 1.27")
        try Data("2026-06-01,GBP,cheap\n".utf8).write(to: file)
        let wrong = try await Binary.run(["rates", "set", "--file", file.path], environment)
        #expect(wrong.status == 2 && wrong.stderr.contains("line 1"), "\(wrong.stderr)")
    }

    @Test func badArgumentsAreUsageErrors() async throws {
        let cases: [([String], String)] = [
            (["export"], "missing what to export"),
            (["export", "players"], "unknown export"),
            (["export", "transactions", "--until", "2026-12-01"], "--since is required"),
            (["export", "transactions", "--since", "2026-11-01"], "--until is required"),
            (["export", "transactions", "--since", "yesterday", "--until", "2026-12-01"], "RFC 3339"),
            (["export", "transactions", "--since", "2026-02-30", "--until", "2026-12-01"], "RFC 3339"),
            (["export", "transactions", "--since", "2026-12-01", "--until", "2026-11-01"], "before --until"),
            (
                [
                    "export", "transactions", "--since", "2026-11-01", "--until", "2026-12-01", "--environment",
                    "staging",
                ], "production, sandbox or all"
            ),
            (
                ["export", "transactions", "--since", "2026-11-01", "--until", "2026-12-01", "--format", "xlsx"],
                "unknown option --format"
            ),
            (["rates", "set"], "--file is required"),
            (["rates", "set", "--file", "/nonexistent/rates.csv"], "cannot read"),
        ]
        for (arguments, message) in cases {
            let result = try await Binary.run(arguments)
            #expect(result.status == 2, "\(arguments): exit \(result.status), \(result.stderr)")
            #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
        let help = try await Binary.run(["export", "--help"])
        #expect(help.status == 0 && help.stdout.contains("--since TIME --until TIME"))
    }
}
