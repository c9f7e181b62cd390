import Foundation

/// A fixed set of connections, each owned by one dedicated thread. libpq blocks, so no call ever
/// runs on Swift's cooperative pool or a Dispatch global queue: async callers enqueue a job and
/// are resumed when the owning thread has run it.
///
/// A connection found broken (server restarted, network cut) is dropped and re-opened for the
/// next job, so the pool recovers by itself.
public final class PostgresPool: Sendable {
    public struct Configuration: Sendable {
        public var connectionString: String
        public var size: Int = 8
        public var connectTimeoutSeconds: Int = 5
        public var statementTimeoutMilliseconds: Int = 30_000

        public init(connectionString: String, size: Int = 8) {
            self.connectionString = connectionString
            self.size = size
        }
    }

    public struct Statistics: Sendable, Equatable {
        public let size: Int
        public let inUse: Int
        public var idle: Int { size - inUse }

        public init(size: Int, inUse: Int) {
            self.size = size
            self.inUse = inUse
        }
    }

    private let configuration: Configuration
    private let queue: JobQueue

    public init(_ configuration: Configuration) {
        precondition(configuration.size > 0, "a pool needs at least one connection")
        self.configuration = configuration
        queue = JobQueue()
        for index in 0..<configuration.size {
            let worker = Thread { [queue, configuration] in
                ConnectionWorker(configuration: configuration, queue: queue).run()
            }
            worker.name = "postgres-\(index)"
            worker.start()
        }
    }

    /// What the pool connects with, for a connection of another kind (a `PostgresListener`).
    public var connectionString: String { configuration.connectionString }

    public var statistics: Statistics {
        Statistics(size: configuration.size, inUse: queue.busyCount)
    }

    /// Runs `body` with a leased connection on a pool thread. The connection returns to the
    /// pool when `body` returns or throws.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = queue.enqueue { connection in
                continuation.resume(with: Result { try body(try connection.get()) })
            }
            if !accepted {
                continuation.resume(throwing: PostgresError(.poolClosed, "the database pool is shut down"))
            }
        }
    }

    /// Runs `job` on a pool thread with a leased connection (or the reason none could be opened)
    /// without an async caller: for work that resumes its own continuations (group commit).
    /// False once the pool is shut down.
    public func submit(_ job: @escaping @Sendable (Result<PostgresConnection, any Error>) -> Void) -> Bool {
        queue.enqueue(job)
    }

    /// Runs `body` inside BEGIN … COMMIT; any error thrown rolls back.
    public func withTransaction<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
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
    public func query(_ query: PostgresQuery) async throws -> [PostgresRow] {
        try await withConnection { try $0.query(query) }
    }

    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await withConnection { try $0.execute(query) }
    }

    /// Stops accepting jobs; queued jobs still run, then the threads close their connections.
    public func shutdown() {
        queue.close()
    }
}

/// The jobs waiting for a connection. A job receives its connection, or the reason none could be opened.
final class JobQueue: @unchecked Sendable {
    typealias Job = (Result<PostgresConnection, any Error>) -> Void

    private let condition = NSCondition()  // guards every field below
    private var jobs: [Job] = []
    private var head = 0
    private var closed = false
    private var busy = 0

    var busyCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return busy
    }

    func enqueue(_ job: @escaping Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        jobs.append(job)
        condition.signal()
        return true
    }

    /// Blocks the calling (pool) thread until a job arrives; nil once closed and drained.
    func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while head == jobs.count && !closed { condition.wait() }
        guard head < jobs.count else { return nil }
        let job = jobs[head]
        head += 1
        if head > 64 && head * 2 > jobs.count {
            jobs.removeFirst(head)
            head = 0
        }
        busy += 1
        return job
    }

    func finished() {
        condition.lock()
        busy -= 1
        condition.unlock()
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }
}

/// The loop one pool thread runs: take a job, make sure the connection is sound, run it.
private struct ConnectionWorker {
    let configuration: PostgresPool.Configuration
    let queue: JobQueue

    func run() {
        var connection: PostgresConnection?
        while let job = queue.next() {
            if let current = connection, !current.isHealthy { connection = nil }
            if connection == nil {
                do {
                    connection = try PostgresConnection(connectionString: configuration.connectionString,
                                                        connectTimeoutSeconds: configuration.connectTimeoutSeconds,
                                                        statementTimeoutMilliseconds: configuration.statementTimeoutMilliseconds)
                } catch {
                    job(.failure(error))
                    queue.finished()
                    continue
                }
            }
            if let current = connection {
                job(.success(current))
                // A job must leave the connection as it found it; one that did not (or broke it) is replaced.
                if !current.isHealthy || !current.isIdleOutsideTransaction { connection = nil }
            }
            queue.finished()
        }
    }
}
