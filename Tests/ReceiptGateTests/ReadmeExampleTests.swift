import Foundation
import TestSupport
import Testing

/// The README's walk-through, its shell blocks run as written (each marked
/// `<!-- walkthrough:NAME -->`), so the README and the product cannot drift apart unnoticed.
/// Only the receiver's port changes (9000 may be taken on a test machine); the binary under test
/// stands where the README puts the release build on PATH, and the database is the tests' own.
@Suite struct ReadmeWalkthrough {
    @Test func theWalkthroughRunsAsWritten() async throws {
        let readme = try ReadmeBlocks()
        let directory = TestDatabase.temporaryDirectory("walkthrough")
        var shell = WalkthroughShell(
            directory: directory,
            environment: Binary.environment([
                "DATABASE_URL": try await TestDatabase.makeDatabase(prefix: "walkthrough"),
                "RECEIPTGATE_PORT": "0",  // the service's port is read from its log, not assumed
            ]))
        let binaries = URL(fileURLWithPath: Binary.path).deletingLastPathComponent().path
        shell.environment["PATH"] = binaries + ":" + (shell.environment["PATH"] ?? "/usr/bin:/bin")

        let (receiver, hookPort) = try await startReceiver(readme, shell)
        defer { receiver.send(SIGTERM) }
        let client = try await shell.run(try readme.block("client", port: hookPort))
        try #require(client.status == 0, "client create: \(client.stderr)")
        let purchase = try await shell.run(try readme.block("purchase"))
        try #require(purchase.status == 0, "dev purchase: \(purchase.stderr)")
        #expect(
            purchase.stderr.contains("RECEIPTGATE_APPLE_ROOT_CERTS=\(directory.path)/.receiptgate/dev-pki/root.pem"),
            "\(purchase.stderr)")
        let token = try String(contentsOf: directory.appendingPathComponent("purchase.jws"), encoding: .utf8)
        let transactionID = try #require(try DevPurchaseCommand.payload(ofJWS: token)["transactionId"] as? String)

        let server = try shell.launch(try readme.block("serve"))
        let line = try await server.waitForStderrLine(containing: "\"listening\"")
        shell.environment["RECEIPTGATE_URL"] = try #require(try Binary.json(line)["url"] as? String)

        let credentials = try readme.block("credentials")
        let verified = try await shell.json(credentials + "\n" + readme.block("verify"))
        #expect(verified["status"] as? String == "verified")
        #expect((verified["transaction"] as? [String: Any])?["transaction_id"] as? String == transactionID)
        // The receiver prints the event the outbox delivered for this purchase.
        try await WebhookDelivery.waitUntil {
            receiver.stdout.contains("transaction.verified") && receiver.stdout.contains(transactionID)
        }
        let read = try await shell.json(credentials + "\n" + readme.block("read"))
        #expect((read["transactions"] as? [[String: Any]])?.first?["transaction_id"] as? String == transactionID)

        // The store's refund of it, sent by `dev notify`: the receiver checks its signature and prints it.
        let notified = try await shell.run(try readme.block("notify"))
        #expect(notified.status == 0, "dev notify: \(notified.stderr)")
        #expect(notified.stdout.contains("accepted"), "\(notified.stdout)")
        try await WebhookDelivery.waitUntil { receiver.stdout.contains("transaction.refunded") }
        #expect(!receiver.stdout.contains("refused"), "the receiver refused a webhook: \(receiver.stdout)")
        let after = try await shell.json(credentials + "\n" + readme.block("read"))
        #expect((after["transactions"] as? [[String: Any]])?.first?["state"] as? String == "refunded", "\(after)")

        // The serve block is one command, so bash ran the service itself: SIGTERM stops it cleanly.
        server.send(SIGTERM)
        #expect(try await server.wait(timeout: .seconds(30)) == 0)
    }

    /// The receiver block on a free port. A port found free can be taken by a parallel test
    /// before Python binds it; then another port is tried.
    func startReceiver(_ readme: ReadmeBlocks, _ shell: WalkthroughShell) async throws -> (ChildProcess, Int) {
        for _ in 0..<3 {
            let port = try RawHTTP.freePort()
            let receiver = try shell.launch(try readme.block("receiver", port: port))
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline && !receiver.stderr.contains("Address already in use") {
                if RawHTTP.isListening(port: port) { return (receiver, port) }
                try await Task.sleep(for: .milliseconds(50))
            }
            receiver.send(SIGKILL)
        }
        throw RawHTTP.Failure(description: "the README's webhook receiver did not start")
    }
}

/// The README's marked shell blocks.
struct ReadmeBlocks {
    let text: String

    init() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        text = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
    }

    func block(_ name: String) throws -> String {
        let start = try #require(
            text.range(of: "<!-- walkthrough:\(name) -->\n```sh\n"), "README has no walkthrough:\(name) block")
        let end = try #require(text.range(of: "\n```\n", range: start.upperBound..<text.endIndex))
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// The block with the README's receiver port (9000) replaced; the README must name it.
    func block(_ name: String, port: Int) throws -> String {
        let block = try block(name)
        try #require(block.contains("9000"), "the \(name) block no longer names port 9000")
        return block.replacingOccurrences(of: "9000", with: String(port))
    }
}

/// Runs README blocks with bash in the walk-through's folder, as a reader would in a terminal.
struct WalkthroughShell {
    let directory: URL
    var environment: [String: String]

    /// To completion, stopping at the first command that fails.
    func run(_ script: String) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run(
            "/bin/bash",
            ["-c", #"cd "$1" && exec /bin/bash -euo pipefail -c "$2""#, "walkthrough", directory.path, script],
            environment: environment)
    }

    /// A block whose one command keeps running (a server). Bash execs a lone command, so the
    /// child is the program itself and a signal sent to it reaches that program.
    func launch(_ script: String) throws -> ChildProcess {
        try ChildProcess.launch(
            "/bin/bash", ["-c", #"cd "$1" && exec /bin/bash -c "$2""#, "walkthrough", directory.path, script],
            environment: environment)
    }

    /// Runs a block whose output is one JSON object (a curl request).
    func json(_ script: String) async throws -> [String: Any] {
        let result = try await run(script)
        try #require(result.status == 0, "stderr: \(result.stderr)")
        return try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any],
            "stdout: \(result.stdout)")
    }
}
