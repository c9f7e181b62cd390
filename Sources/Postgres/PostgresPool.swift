import Foundation
import Workers

/// A fixed set of connections, each owned by one worker thread (`BlockingWorkers`). libpq blocks,
/// so no call ever runs on Swift's cooperative pool or a Dispatch global queue: async callers
/// enqueue a job and are resumed when the owning thread has run it.
///
/// A connection found broken (server restarted, network cut) is dropped and re-opened for the
/// next job, so the pool recovers by itself. A job that waits longer than `leaseTimeout` for a
/// connection is answered `POOL_TIMEOUT` instead of being run: its caller has given up by then
/// (requests have deadlines), and a backlog of abandoned work would only delay the next callers.
package final class PostgresPool: Sendable {
    package struct Configuration: Sendable {
        package var connectionString: String
        package var size: Int = 8
        package var connectTimeoutSeconds: Int = 5
        package var statementTimeoutMilliseconds: Int = 30_000
        /// As long as a request's default deadline: a job older than that has no caller left.
        package var leaseTimeout: Duration = .seconds(30)

        package init(connectionString: String, size: Int = 8) {
            self.connectionString = connectionString
            self.size = size
        }
    }

    package struct Statistics: Sendable, Equatable {
        package let size: Int
        package let inUse: Int
        package var idle: Int { size - inUse }

        package init(size: Int, inUse: Int) {
            self.size = size
            self.inUse = inUse
        }
    }

    private let configuration: Configuration
    private let workers: BlockingWorkers<ConnectionSlot>

    package init(_ configuration: Configuration) {
        precondition(configuration.size > 0, "a pool needs at least one connection")
        self.configuration = configuration
        workers = BlockingWorkers(
            name: "postgres", threads: configuration.size, leaseTimeout: configuration.leaseTimeout,
            local: { ConnectionSlot(configuration: configuration) })
    }

    /// What the pool connects with, for a connection of another kind (a `PostgresListener`).
    package var connectionString: String { configuration.connectionString }

    package var statistics: Statistics {
        Statistics(size: configuration.size, inUse: workers.busyCount)
    }

    /// Jobs waiting for a connection now.
    package var waitingJobs: Int { workers.waitingCount }

    /// Runs `body` with a leased connection on a pool thread. The connection returns to the
    /// pool when `body` returns or throws. A caller cancelled while waiting for a connection
    /// (a request past its deadline) gets `CancellationError`, and `body` never runs.
    package func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        let timeout = configuration.leaseTimeout
        return try await workers.perform(
            late: PostgresError(.poolTimeout, "no database connection was free within \(timeout)"),
            closed: PostgresError(.poolClosed, "the database pool is shut down")
        ) { slot in
            var outcome: Result<T, any Error> = .failure(PostgresError(.poolClosed, "the database pool is shut down"))
            slot.run { connection in outcome = Result { try body(try connection.get()) } }
            return try outcome.get()
        }
    }

    /// Runs `job` on a pool thread with a leased connection (or the reason none could be opened)
    /// without an async caller: for work that resumes its own continuations (group commit).
    /// False once the pool is shut down.
    package func submit(_ job: @escaping @Sendable (Result<PostgresConnection, any Error>) -> Void) -> Bool {
        let timeout = configuration.leaseTimeout
        return workers.submit(
            { slot in slot.run(job) },
            late: {
                job(.failure(PostgresError(.poolTimeout, "no database connection was free within \(timeout)")))
            })
    }

    /// Runs `body` inside BEGIN … COMMIT; any error thrown rolls back.
    package func withTransaction<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            try connection.execute("BEGIN")
            do {
                let value = try body(connection)
                try connection.execute("COMMIT")
                return value
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
    }

    @discardableResult
    package func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withConnection { try $0.query(query) }
    }

    @discardableResult
    package func execute(_ query: PostgresQuery) async throws -> Int {
        try await withConnection { try $0.execute(query) }
    }

    /// Stops accepting jobs; queued jobs still run, then the threads close their connections.
    package func shutdown() {
        workers.close()
    }
}

/// One pool thread's connection: made sound before each job, replaced when a job broke it.
struct ConnectionSlot {
    let configuration: PostgresPool.Configuration
    private var connection: PostgresConnection?

    init(configuration: PostgresPool.Configuration) { self.configuration = configuration }

    mutating func run(_ job: (Result<PostgresConnection, any Error>) -> Void) {
        if let current = connection, !current.isHealthy { connection = nil }
        if connection == nil {
            do {
                connection = try PostgresConnection(
                    connectionString: configuration.connectionString,
                    connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                    statementTimeoutMilliseconds: configuration.statementTimeoutMilliseconds)
            } catch {
                job(.failure(error))
                return
            }
        }
        guard let current = connection else { return }
        job(.success(current))
        // A job must leave the connection as it found it; one that did not (or broke it, or found
        // its server read-only) is replaced.
        if !current.isHealthy || !current.isIdleOutsideTransaction || current.refusedWrites || current.retired {
            connection = nil
        }
    }
}
