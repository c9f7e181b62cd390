package import Foundation

/// A private PostgreSQL cluster in a folder: initdb on first use, pg_ctl start/stop, a Unix
/// socket inside the cluster folder and no TCP port. Running as root, the server programs run as
/// the `postgres` user (initdb refuses root), and if that user cannot reach the folder (a checkout
/// under /root, mode 0700) the cluster lives under /var/lib/receiptgate instead, recorded in
/// `<folder>/cluster-location`.
///
/// Methods block while the server programs run: call them at start-up or shutdown, never from a
/// request.
package struct EmbeddedCluster: Sendable {
    package static let databaseName = "receiptgate"

    /// Where the caller wants the cluster (the service uses `<data dir>/postgres`).
    package let requestedDirectory: URL
    private let log: @Sendable (String) -> Void

    /// Written into postgresql.conf when the cluster is created.
    package var maxConnections = 200

    package init(directory: URL, log: @escaping @Sendable (String) -> Void = { _ in }) {
        requestedDirectory = directory.standardizedFileURL
        self.log = log
    }

    private var runsAsRoot: Bool { geteuid() == 0 }

    /// The cluster folder actually used (see the type's comment).
    package var clusterDirectory: URL {
        get throws {
            guard runsAsRoot else { return requestedDirectory }
            let pointer = requestedDirectory.deletingLastPathComponent().appendingPathComponent("cluster-location")
            if let recorded = try? String(contentsOf: pointer, encoding: .utf8) {
                return URL(fileURLWithPath: recorded.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            if try postgresUserCanReach(requestedDirectory.deletingLastPathComponent()) { return requestedDirectory }
            let key = String(
                requestedDirectory.path.utf8.reduce(UInt64(1469598103934665603)) { ($0 ^ UInt64($1)) &* 1099511628211 },
                radix: 16)
            let relocated = URL(fileURLWithPath: "/var/lib/receiptgate/clusters/\(key)")
            try FileManager.default.createDirectory(
                at: requestedDirectory.deletingLastPathComponent(), withIntermediateDirectories: true)
            try relocated.path.write(to: pointer, atomically: true, encoding: .utf8)
            log(
                "the postgres user cannot reach \(requestedDirectory.path); the embedded cluster lives at \(relocated.path)"
            )
            return relocated
        }
    }

    /// Whether the cluster was made already (by initdb, here or where its pointer says), found
    /// without creating anything: a command that only reads must not start a new, empty one.
    package var exists: Bool {
        var directory = requestedDirectory
        if runsAsRoot,
            let recorded = try? String(
                contentsOf: requestedDirectory.deletingLastPathComponent().appendingPathComponent("cluster-location"),
                encoding: .utf8)
        {
            directory = URL(fileURLWithPath: recorded.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return FileManager.default.fileExists(atPath: directory.appendingPathComponent("PG_VERSION").path)
    }

    /// libpq connection string for the cluster's `receiptgate` database (over the Unix socket).
    package var connectionString: String {
        get throws { "host=\(Self.quote(try clusterDirectory.path)) user=postgres dbname=\(Self.databaseName)" }
    }

    package var isRunning: Bool {
        get throws {
            let directory = try clusterDirectory
            guard FileManager.default.fileExists(atPath: directory.appendingPathComponent("PG_VERSION").path) else {
                return false
            }
            return try run(tool: "pg_ctl", ["-D", directory.path, "status"], allowFailure: true) == 0
        }
    }

    /// Initializes the cluster if needed and starts it if it is not running.
    /// Returns true if this call started the server (and so should stop it later).
    @discardableResult
    package func start() throws -> Bool {
        let directory = try clusterDirectory
        try withStartLock {
            if !FileManager.default.fileExists(atPath: directory.appendingPathComponent("PG_VERSION").path) {
                try initialize(directory)
            }
        }
        return try withStartLock {
            if try isRunning { return false }
            log("starting embedded PostgreSQL in \(directory.path)")
            try run(
                tool: "pg_ctl",
                [
                    "-D", directory.path, "-l", directory.appendingPathComponent("server.log").path,
                    "-w", "-t", "60", "start",
                ])
            try createDatabaseIfMissing(directory)
            return true
        }
    }

    package func stop() throws {
        let directory = try clusterDirectory
        guard try isRunning else { return }
        log("stopping embedded PostgreSQL in \(directory.path)")
        try run(tool: "pg_ctl", ["-D", directory.path, "-m", "fast", "-w", "-t", "60", "stop"])
    }

    /// Stops the cluster unless another ReceiptGate process is connected to it (the last one out
    /// stops it). Returns true if it stopped the server.
    @discardableResult
    package func stopIfUnused() throws -> Bool {
        let directory = try clusterDirectory
        guard try isRunning else { return false }
        let others = try withStartLock { () -> Int in
            let admin = try PostgresConnection(
                connectionString: "host=\(Self.quote(directory.path)) user=postgres dbname=postgres",
                connectTimeoutSeconds: 10, statementTimeoutMilliseconds: 10_000)
            let own = "receiptgate/\(getpid())"
            let rows = try admin.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity
                WHERE application_name LIKE 'receiptgate/%' AND application_name <> \(own) AND pid <> pg_backend_pid()
                """)
            let count = try rows.first?.decode("n", as: Int.self) ?? 0
            if count == 0 { try stop() }
            return count
        }
        if others > 0 {
            log("leaving embedded PostgreSQL running: \(others) connection(s) from other ReceiptGate processes")
        }
        return others == 0
    }

    /// `pg_ctl stop -m immediate`: every backend killed without a checkpoint, as a crash looks to
    /// clients; `start()` brings it back through crash recovery (fault tests use the pair).
    package func stopImmediately() throws {
        try run(tool: "pg_ctl", ["-D", try clusterDirectory.path, "-m", "immediate", "-w", "-t", "60", "stop"])
    }

    /// `pg_ctl restart` (tests use it to prove clients reconnect).
    package func restart() throws {
        let directory = try clusterDirectory
        try run(
            tool: "pg_ctl",
            [
                "-D", directory.path, "-l", directory.appendingPathComponent("server.log").path,
                "-m", "fast", "-w", "-t", "60", "restart",
            ])
    }

    // MARK: - Steps

    private func initialize(_ directory: URL) throws {
        log("initializing embedded PostgreSQL cluster in \(directory.path)")
        let manager = FileManager.default
        try manager.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        if runsAsRoot {
            let parent = directory.deletingLastPathComponent()
            if parent.path.hasPrefix("/var/lib/receiptgate") {
                try manager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: "/var/lib/receiptgate")
                try manager.setAttributes([.posixPermissions: 0o755], ofItemAtPath: parent.path)
            }
            try run(executable: "/bin/chown", ["postgres:postgres", directory.path])
        }
        try run(
            tool: "initdb", ["-D", directory.path, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8"])
        // Unix socket in the cluster folder only; no TCP listener at all.
        let settings = """

            # ReceiptGate embedded cluster
            listen_addresses = ''
            unix_socket_directories = '\(directory.path.replacingOccurrences(of: "'", with: "''"))'
            max_connections = \(maxConnections)
            \(Self.sizedFor(physicalMemory: ProcessInfo.processInfo.physicalMemory))
            """
        let configuration = directory.appendingPathComponent("postgresql.conf")
        let handle = try FileHandle(forWritingTo: configuration)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(settings.utf8))
    }

    /// Settings for the machine the cluster is made on (docs/operations.md, "Sizing PostgreSQL"):
    /// a ledger's indexes outgrow Postgres's default 128 MB of buffers within months, and every
    /// first write to an index page after a checkpoint logs the whole page. So: an eighth of the
    /// memory for buffers (128 MB to 2 GB: the rest is the file cache's, and other processes'),
    /// what the planner may count on as cache, compressed full-page images, and checkpoints far
    /// enough apart that each page is logged whole less often. Edit postgresql.conf to change them.
    static func sizedFor(physicalMemory: UInt64) -> String {
        let megabytes = physicalMemory / (1 << 20)
        let buffers = min(max(megabytes / 8, 128), 2048)
        let cache = max(megabytes / 2, buffers)
        return """
            shared_buffers = \(buffers)MB
            effective_cache_size = \(cache)MB
            wal_compression = on
            max_wal_size = 4GB
            checkpoint_timeout = 15min

            """
    }

    private func createDatabaseIfMissing(_ directory: URL) throws {
        let admin = try PostgresConnection(
            connectionString: "host=\(Self.quote(directory.path)) user=postgres dbname=postgres",
            connectTimeoutSeconds: 10, statementTimeoutMilliseconds: 60_000)
        let exists = try admin.query("SELECT 1 FROM pg_database WHERE datname = \(Self.databaseName)")
        if exists.isEmpty {
            try admin.executeScript("CREATE DATABASE \(Self.databaseName)")
        }
    }

    /// Serializes initdb/start decisions between processes sharing the data folder.
    private func withStartLock<T>(_ body: () throws -> T) throws -> T {
        let lockPath = requestedDirectory.deletingLastPathComponent().appendingPathComponent(".cluster.lock").path
        try FileManager.default.createDirectory(
            at: requestedDirectory.deletingLastPathComponent(), withIntermediateDirectories: true)
        let descriptor = open(lockPath, O_CREAT | O_RDWR, 0o600)
        guard descriptor >= 0 else { throw PostgresError(.clusterFailed, "cannot open \(lockPath)") }
        defer { close(descriptor) }
        flock(descriptor, LOCK_EX)
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }

    private func postgresUserCanReach(_ directory: URL) throws -> Bool {
        var probe = directory
        while !FileManager.default.fileExists(atPath: probe.path) { probe.deleteLastPathComponent() }
        return try run(
            executable: "/usr/sbin/runuser", ["-u", "postgres", "--", "test", "-x", probe.path],
            allowFailure: true) == 0
    }

    // MARK: - Running the server programs

    @discardableResult
    private func run(tool: String, _ arguments: [String], allowFailure: Bool = false) throws -> Int32 {
        let path = try Self.locate(tool)
        if runsAsRoot {
            return try run(
                executable: "/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments, allowFailure: allowFailure)
        }
        return try run(executable: path, arguments, allowFailure: allowFailure)
    }

    @discardableResult
    private func run(executable: String, _ arguments: [String], allowFailure: Bool = false) throws -> Int32 {
        // The server programs get C.UTF-8 messages whatever the caller's locale.
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C.UTF-8"
        environment["LANG"] = "C.UTF-8"
        let outcome = try Subprocess.run(executable, arguments, environment: environment)
        if outcome.status != 0 && !allowFailure {
            let text = String(outcome.output.suffix(2000)).trimmingCharacters(in: .whitespacesAndNewlines)
            throw PostgresError(
                .clusterFailed,
                "\(URL(fileURLWithPath: executable).lastPathComponent) \(arguments.first ?? "") failed (exit \(outcome.status)): \(text)"
            )
        }
        return outcome.status
    }

    /// initdb and pg_ctl from PATH, else the newest /usr/lib/postgresql/<version>/bin.
    static func locate(_ tool: String) throws -> String {
        let manager = FileManager.default
        var candidates: [String] = []
        let versions = ((try? manager.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap { Int($0) }.sorted(by: >)
        candidates += versions.map { "/usr/lib/postgresql/\($0)/bin/\(tool)" }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        candidates = path.split(separator: ":").map { "\($0)/\(tool)" } + candidates
        guard let found = candidates.first(where: { manager.isExecutableFile(atPath: $0) }) else {
            throw PostgresError(
                .clusterFailed,
                "\(tool) not found on PATH or under /usr/lib/postgresql/*/bin; install the postgresql package")
        }
        return found
    }

    static func quote(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
