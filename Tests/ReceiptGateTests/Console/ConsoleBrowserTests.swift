import Foundation
import TestSupport
import Testing

/// The operator console, driven by a person's browser: headless Chromium under Selenium
/// (Python/console_browser.py and its console_*.py steps, written from the console's HTML
/// contract only) against the real service and a ledger made through the public API. The script
/// signs in, walks every page (one h1, labelled fields, readable contrast, no request leaving the
/// service, no inline script or style), checks the analytics page's figures against SQL over a
/// seeded ledger, creates and disables a client, finds purchases, redelivers
/// a dead webhook, checks CSRF and sign-out, and screenshots each page (with the HTML as sent) to
/// .build/console-screenshots/.
@Suite struct ConsoleBrowser {
    static let python = ProcessInfo.processInfo.environment["RECEIPTGATE_ORACLE_PYTHON"]
    static let chromium = "/usr/bin/chromium", chromedriver = "/usr/bin/chromedriver"
    static let inCI = ProcessInfo.processInfo.environment["CI"] != nil

    /// Looked up on disk, not by starting Python (see SchemaDriven.hasSchemathesis for why).
    static let hasSelenium: Bool = {
        guard let python else { return false }
        let lib = URL(fileURLWithPath: python).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("lib")
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: lib.path)) ?? []
        return versions.contains {
            FileManager.default.fileExists(atPath: lib.appendingPathComponent("\($0)/site-packages/selenium").path)
        }
    }()
    static let hasBrowser =
        FileManager.default.isExecutableFile(atPath: chromium)
        && FileManager.default.isExecutableFile(atPath: chromedriver)

    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test(
        .enabled(
            if: (hasSelenium && hasBrowser) || inCI,
            "needs selenium in RECEIPTGATE_ORACLE_PYTHON's venv (scripts/test.sh) and Debian's chromium and chromium-driver (scripts/setup.sh)"
        ),
        .timeLimit(.minutes(8)))
    func anOperatorWorksThroughTheConsoleInABrowser() async throws {
        let python = try #require(Self.python, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        #expect(Self.hasSelenium, "selenium is not importable by \(python)")
        try #require(
            Self.hasBrowser, "\(Self.chromium) and \(Self.chromedriver) must be installed in CI (scripts/setup.sh)")

        let fixture = try await ConsoleFixture.start()
        defer { fixture.stop() }
        let screenshots = Self.repositoryRoot.appendingPathComponent(".build/console-screenshots")
        try FileManager.default.createDirectory(at: screenshots, withIntermediateDirectories: true)
        // The analytics page's ledger beside the purchases made through the API (attempts left
        // out: the walk compares the overview's with /metrics).
        let now = Date(), pool = fixture.harness.pool, client = fixture.harness.client.clientID
        try await AnalyticsLedger.seed(pool, client: client, other: client, now: now, attempts: false)
        let analytics: [String: any Sendable] = [
            "30": try await AnalyticsLedger.expected(pool, days: 30, now: now),
            "7": try await AnalyticsLedger.expected(pool, days: 7, now: now),
            "sandbox-90": try await AnalyticsLedger.expected(pool, days: 90, now: now, environment: "sandbox"),
            "export_rows": try await AnalyticsLedger.exportRows(pool, days: 30, now: now),
        ]
        let clientName = try #require(try await fixture.harness.service.clients.find(client)).name
        let plan = try Self.plan(fixture, screenshots: screenshots, analytics: analytics, clientName: clientName)

        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Python/console_browser.py").path
        // No __pycache__ written into the source tree by the script's imports of its own modules.
        let result = try await ChildProcess.run(
            python, [script, plan.path],
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"],
            timeout: .seconds(360))
        let lastLine = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
        let report = try #require(
            try? JSONSerialization.jsonObject(with: Data(lastLine.utf8)) as? [String: Any],
            "the script printed no JSON report (exit \(result.status)); stderr: \(result.stderr.suffix(4000))")
        let failures = report["failures"] as? [String] ?? []
        for failure in failures { Issue.record("console: \(failure)") }
        #expect(
            result.status == 0 && report["ok"] as? Bool == true,
            "the browser walk failed\(failures.isEmpty ? "; stderr: \(result.stderr.suffix(2000))" : " (each failure above)")"
        )
        // What the script did is what a user would notice outside the browser too.
        #expect(
            fixture.receiver.acknowledged.map(\.eventID).contains(fixture.undeliveredEventID),
            "the redelivered webhook event never reached the game server")
        #expect((report["skipped"] as? [String])?.isEmpty == true, "steps skipped: \(report["skipped"] ?? [])")
    }

    /// What the script needs (URLs, the admin token, the purchases and what was counted), as a JSON file.
    static func plan(
        _ fixture: ConsoleFixture, screenshots: URL, analytics: [String: any Sendable], clientName: String
    ) throws -> URL {
        let plan: [String: Any] = [
            "console": fixture.consoleURL, "api": fixture.apiURL, "admin_token": ConsoleFixture.adminToken,
            "receiver_control": fixture.receiverControl.url, "order_id": ConsoleFixture.orderID,
            "purchases": [
                "ordered": fixture.ordered.json, "refunded": fixture.refunded.json,
                "undelivered": fixture.undelivered.json,
            ],
            "undelivered_event_id": fixture.undeliveredEventID, "verifications": fixture.verificationsMade,
            "screenshots": screenshots.path, "chromium": chromium, "chromedriver": chromedriver,
            "analytics": analytics, "client_name": clientName,
        ]
        let file = TestDatabase.temporaryDirectory("console-browser").appendingPathComponent("plan.json")
        try JSONSerialization.data(withJSONObject: plan, options: [.prettyPrinted]).write(to: file)
        return file
    }
}
