import Foundation
import Postgres
import TestSupport

/// A real streaming standby of a private test cluster (pg_basebackup, then a second postmaster
/// on a socket of its own), whose replay can be held back with `recovery_min_apply_delay`: a
/// standby that is behind by a known amount, the way a loaded one is.
struct StreamingStandby {
    let directory: URL
    var connectionString: String {
        "host='\(directory.path)' user=postgres dbname=\(EmbeddedCluster.databaseName) connect_timeout=60"
    }

    static func start(following primary: EmbeddedCluster, applyDelay: String) async throws -> StreamingStandby {
        let primaryDirectory = try primary.clusterDirectory.path
        let directory = TestDatabase.temporaryDirectory("standby").appendingPathComponent("postgres")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if geteuid() == 0 { try run("/bin/chown", ["postgres:postgres", directory.path]) }
        try await onOwnThread {
            try asPostgres(
                "pg_basebackup",
                ["-h", primaryDirectory, "-U", "postgres", "-D", directory.path, "-R", "-X", "stream", "-c", "fast"])
            // The copy holds the primary's socket lock file (the socket lives in its data folder).
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
            where name.hasPrefix(".s.PGSQL.") {
                try FileManager.default.removeItem(at: directory.appendingPathComponent(name))
            }
            let settings = """

                unix_socket_directories = '\(directory.path)'
                recovery_min_apply_delay = '\(applyDelay)'
                hot_standby = on

                """
            let handle = try FileHandle(forWritingTo: directory.appendingPathComponent("postgresql.conf"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(settings.utf8))
            try handle.close()
            try asPostgres(
                "pg_ctl",
                ["-D", directory.path, "-l", directory.appendingPathComponent("standby.log").path, "-w", "start"])
        }
        return StreamingStandby(directory: directory)
    }

    /// Ends recovery: the server becomes a primary of its own (a failover, seen from the read URL).
    func promote() throws {
        try Self.asPostgres("pg_ctl", ["-D", directory.path, "-w", "promote"])
    }

    func stop() {
        try? Self.asPostgres("pg_ctl", ["-D", directory.path, "-m", "immediate", "-w", "stop"])
    }

    private static func asPostgres(_ tool: String, _ arguments: [String]) throws {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []).compactMap
        { Int($0) }.sorted()
        let path = "/usr/lib/postgresql/\(versions.last ?? 15)/bin/\(tool)"
        if geteuid() == 0 {
            try run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments)
        } else {
            try run(path, arguments)
        }
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let outcome = try ChildProcess.runBlocking(
            executable, arguments, environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"])
        guard outcome.status == 0 else {
            throw PostgresError(
                .clusterFailed,
                "\(executable) \(arguments.prefix(2)) failed (\(outcome.status)): \(outcome.stderr.suffix(1500))")
        }
    }
}
