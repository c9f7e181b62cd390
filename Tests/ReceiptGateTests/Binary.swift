import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport

/// The built `receiptgate` executable, beside the test bundle in the build folder.
enum Binary {
    static var path: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("receiptgate")
            .path
    }

    /// A minimal environment: what a user would have, plus the given variables.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": "/tmp"]
        environment.merge(extra) { _, new in new }
        return environment
    }

    static func run(
        _ arguments: [String], _ extra: [String: String] = [:]
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        try await ChildProcess.run(path, arguments, environment: environment(extra))
    }

    static func json(_ text: String) throws -> [String: Any] {
        (try JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    /// Environment for a database of its own and a fixed master key.
    static func databaseEnvironment() async throws -> [String: String] {
        [
            "DATABASE_URL": try await TestDatabase.makeDatabase(prefix: "cli"),
            "RECEIPTGATE_MASTER_KEY": SecureRandom.bytes(32).base64EncodedString(),
            "RECEIPTGATE_DATA_DIR": TestDatabase.temporaryDirectory("cli-data").path,
        ]
    }
}
