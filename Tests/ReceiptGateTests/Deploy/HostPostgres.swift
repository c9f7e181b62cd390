import Foundation
import TestSupport

/// A PostgreSQL 15 of its own on a loopback TCP port, for a process that cannot reach the test
/// cluster's socket folder (a container running as another user). Trust authentication: it
/// listens on 127.0.0.1 only and lives for one test.
struct HostPostgres {
    let url: String
    private let dataDirectory: String
    private static let bin = "/usr/lib/postgresql/15/bin"

    /// As root, initdb and postgres run as `postgres` (they refuse root).
    private static func asOwner(
        _ program: String, _ arguments: [String]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        let environment = ["PATH": "/usr/bin:/bin", "LC_ALL": "C"]
        if getuid() == 0 {
            return try ChildProcess.runBlocking(
                "/usr/bin/setpriv",
                ["--reuid", "postgres", "--regid", "postgres", "--init-groups", "--", program]
                    + arguments, environment: environment)
        }
        return try ChildProcess.runBlocking(program, arguments, environment: environment)
    }

    static func start() async throws -> HostPostgres {
        try await onOwnThread {
            let folder = TestDatabase.temporaryDirectory("host-postgres").path
            if getuid() == 0 { _ = try ChildProcess.runBlocking("/bin/chown", ["postgres:postgres", folder]) }
            let data = folder + "/data", port = try RawHTTP.freePort()
            let initdb = try asOwner(bin + "/initdb", ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync"])
            guard initdb.status == 0 else { throw RawHTTP.Failure(description: "initdb: \(initdb.stderr)") }
            let options = "-p \(port) -h 127.0.0.1 -k \(folder) -c fsync=off"
            let started = try asOwner(
                bin + "/pg_ctl", ["-D", data, "-o", options, "-l", folder + "/log", "-w", "start"])
            guard started.status == 0 else { throw RawHTTP.Failure(description: "pg_ctl start: \(started.stderr)") }
            return HostPostgres(url: "postgresql://postgres@127.0.0.1:\(port)/postgres", dataDirectory: data)
        }
    }

    func stop() {
        _ = try? Self.asOwner(Self.bin + "/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
    }
}
