package import Foundation
package import Postgres

/// One real PostgreSQL cluster per test process, started on first use under /tmp (reachable by
/// the `postgres` user when tests run as root) and stopped when the process exits. Each caller
/// gets a database of its own, so suites run in parallel without seeing each other's rows.
package enum TestDatabase {
    private static let holder = SharedClusterHolder()

    /// A libpq connection string for a new, empty database.
    package static func makeDatabase(prefix: String = "test") async throws -> String {
        let cluster = try await holder.cluster()
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        try await cluster.createDatabase(name)
        return
            "host='\(cluster.cluster.requestedDirectory.path)' user=postgres dbname=\(name) \(SharedCluster.connectTimeout)"
    }

    /// A fresh cluster that belongs to the caller alone (for restart tests), stopped at exit.
    package static func makePrivateCluster() async throws -> EmbeddedCluster {
        let cluster = EmbeddedCluster(directory: temporaryDirectory("private").appendingPathComponent("postgres"))
        _ = try await onOwnThread { try cluster.start() }
        ClusterReaper.shared.add(cluster)
        return cluster
    }

    package static func temporaryDirectory(_ label: String) -> URL {
        let url = URL(fileURLWithPath: "/tmp/receiptgate-tests/\(label)-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: "/tmp/receiptgate-tests")
        ClusterReaper.shared.removeAtExit(url)
        return url
    }
}

/// Runs blocking work (initdb, pg_ctl) on a thread of its own: tests run on Swift's small
/// cooperative pool, and blocking it stalls every other test's async work (servers included).
package func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Starts the shared cluster once, off the cooperative pool; concurrent callers wait for the same start.
private actor SharedClusterHolder {
    private var starting: Task<SharedCluster, any Error>?

    func cluster() async throws -> SharedCluster {
        if let starting { return try await starting.value }
        let task = Task { try await onOwnThread { try SharedCluster() } }
        starting = task
        return try await task.value
    }
}

private final class SharedCluster: Sendable {
    /// Every suite starts at once, so on a 2-core CI machine a backend's start can wait behind
    /// dozens of others for longer than the service's 5-second default; a test database is not
    /// where a slow connect should fail a run (settings in the string win over the pool's).
    static let connectTimeout = "connect_timeout=60"

    let cluster: EmbeddedCluster

    init() throws {
        var cluster = EmbeddedCluster(
            directory: TestDatabase.temporaryDirectory("shared").appendingPathComponent("postgres"))
        // Every suite runs at once against this one cluster, each service with its own pool (and
        // CLI runs with theirs): a run was seen needing more than 1600 at its peak.
        cluster.maxConnections = 3000
        try cluster.start()
        self.cluster = cluster
        ClusterReaper.shared.add(cluster)
    }

    func createDatabase(_ name: String) async throws {
        let pool = PostgresPool(
            .init(
                connectionString:
                    "host='\(cluster.requestedDirectory.path)' user=postgres dbname=postgres \(Self.connectTimeout)",
                size: 1))
        defer { pool.shutdown() }
        try await pool.execute(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"))
    }
}

/// Stops every cluster the tests started when the test process exits.
final class ClusterReaper: @unchecked Sendable {
    static let shared = ClusterReaper()
    private let lock = NSLock()
    private var clusters: [EmbeddedCluster] = []
    private var directories: [URL] = []

    private init() {
        atexit {
            ClusterReaper.shared.stopAll()
        }
    }

    func add(_ cluster: EmbeddedCluster) {
        lock.lock()
        clusters.append(cluster)
        lock.unlock()
    }

    func removeAtExit(_ directory: URL) {
        lock.lock()
        directories.append(directory)
        lock.unlock()
    }

    func stopAll() {
        lock.lock()
        let all = clusters, folders = directories
        clusters = []
        directories = []
        lock.unlock()
        for cluster in all { try? cluster.stop() }
        for folder in folders { try? FileManager.default.removeItem(at: folder) }
    }
}

package final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    package init(_ value: Value) { self.value = value }
    package func get() -> Value { lock.lock(); defer { lock.unlock() }; return value }
    package func set(_ newValue: Value) { lock.lock(); value = newValue; lock.unlock() }
    package func update<T>(_ body: (inout Value) -> T) -> T {
        lock.lock(); defer { lock.unlock() }; return body(&value)
    }
}
