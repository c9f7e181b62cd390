import CLibPQ
import Foundation
import Workers

/// A connection of its own that `LISTEN`s on one channel and hands each notification's payload
/// to `onNotification`, on a thread it owns. When the connection is lost it calls `onLost` at
/// once, reconnects with a growing delay, and calls `onListening` once `LISTEN` is in place again:
/// whoever caches on the strength of these notifications must stop trusting its cache from
/// `onLost` until `onListening`, since notifications sent in between are gone.
///
/// A connection can also stop answering without closing: a stalled or frozen server process, a
/// network that drops packets, a half-open TCP connection. Nothing then arrives, which looks
/// exactly like a quiet channel. So every `heartbeatInterval` the listener sends a round trip and
/// treats a connection that does not answer within `heartbeatTimeout` as lost, and replaces it.
package final class PostgresListener: @unchecked Sendable {
    package struct Callbacks: Sendable {
        package var onListening: @Sendable () -> Void
        package var onLost: @Sendable () -> Void
        package var onNotification: @Sendable (String) -> Void

        package init(
            onListening: @escaping @Sendable () -> Void, onLost: @escaping @Sendable () -> Void,
            onNotification: @escaping @Sendable (String) -> Void
        ) {
            self.onListening = onListening
            self.onLost = onLost
            self.onNotification = onNotification
        }
    }

    private let connectionString: String
    private let channel: String
    private let callbacks: Callbacks
    private let heartbeatInterval: Duration
    private let heartbeatTimeout: Duration
    /// The listener's one thread; closing it is how the listener stops.
    private let worker = BlockingWorkers<Void>(name: "postgres-listen")

    /// `channel` is program text (an identifier), never input.
    package init(
        connectionString: String, channel: String, heartbeatInterval: Duration = .seconds(2),
        heartbeatTimeout: Duration = .seconds(3), callbacks: Callbacks
    ) {
        precondition(
            channel.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") },
            "channel must be an identifier")
        self.connectionString = connectionString
        self.channel = channel
        self.heartbeatInterval = heartbeatInterval
        self.heartbeatTimeout = heartbeatTimeout
        self.callbacks = callbacks
    }

    package func start() {
        worker.submit { [self] _ in run() }
    }

    /// The thread notices within a second (or after its current reconnect delay, at most two) and
    /// closes its connection. A listener stopped before `start` never connects.
    package func stop() {
        worker.close()
    }

    private var isStopped: Bool { worker.isClosed }

    private func run() {
        var delay = 0.05
        while !isStopped {
            do {
                let connection = try PostgresConnection(
                    connectionString: connectionString, connectTimeoutSeconds: 5,
                    statementTimeoutMilliseconds: 10_000)
                // Not the blocking executeScript: a server that accepts the connection and then
                // stalls must not hold this thread.
                deliver(try connection.roundTrip(listenStatement, timeout: heartbeatTimeout))
                delay = 0.05
                callbacks.onListening()
                try listen(on: connection)
            } catch {
                // Fall through: the caller already stops trusting what it cached.
            }
            callbacks.onLost()
            if isStopped { return }
            Thread.sleep(forTimeInterval: delay)
            delay = min(delay * 2, 2)
        }
    }

    /// Re-sent as the heartbeat: on a channel already listened to it changes nothing, costs one
    /// round trip, and leaves the session showing what it is for in `pg_stat_activity`.
    private var listenStatement: String { "LISTEN \(channel)" }

    /// Waits on the socket (at most a second at a time, to notice `stop`), delivers notifications
    /// and sends a heartbeat when one is due, until the connection fails or stops answering.
    private func listen(on connection: PostgresConnection) throws {
        let clock = ContinuousClock()
        var nextHeartbeat = clock.now + heartbeatInterval
        while !isStopped {
            let untilHeartbeat = max(.zero, min(.seconds(1), nextHeartbeat - clock.now))
            deliver(try connection.waitForNotifications(timeoutMilliseconds: Self.milliseconds(untilHeartbeat)))
            if clock.now >= nextHeartbeat {
                deliver(try connection.roundTrip(listenStatement, timeout: heartbeatTimeout))
                nextHeartbeat = clock.now + heartbeatInterval
            }
        }
    }

    private func deliver(_ payloads: [String]) {
        for payload in payloads { callbacks.onNotification(payload) }
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

extension PostgresConnection {
    /// The payloads of the notifications that arrived within the timeout (possibly none).
    /// Throws when the connection is gone.
    func waitForNotifications(timeoutMilliseconds: Int32) throws -> [String] {
        guard let handle = rawHandle, PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(.connectionFailed, "listener connection lost")
        }
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw PostgresError(.connectionFailed, "listener connection lost") }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, timeoutMilliseconds)
        if ready < 0 && errno != EINTR {
            throw PostgresError(.connectionFailed, "poll failed on the listener connection")
        }
        if ready > 0 {
            guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else {
                throw PostgresError(.connectionFailed, "listener connection lost")
            }
        }
        return Self.takeNotifications(handle)
    }

    /// Sends `sql` (no parameters, program text) and waits at most `timeout` for the server to
    /// finish answering it, without ever blocking longer. Returns the notifications that arrived
    /// meanwhile. Throws when the answer is late (the server or the network stalled), when the
    /// statement fails, or when the connection is gone: the connection is then not reusable.
    func roundTrip(_ sql: String, timeout: Duration) throws -> [String] {
        guard let handle = rawHandle, PQstatus(handle) == CONNECTION_OK, PQsendQuery(handle, sql) == 1 else {
            throw PostgresError(.connectionFailed, "listener connection lost")
        }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var failed = false
        while true {
            guard PQconsumeInput(handle) == 1 else {
                throw PostgresError(.connectionFailed, "listener connection lost")
            }
            while PQisBusy(handle) == 0 {
                guard let result = PQgetResult(handle) else {
                    // The whole answer is in.
                    if failed { throw PostgresError(.queryFailed, "the listener's statement failed") }
                    return Self.takeNotifications(handle)
                }
                let status = PQresultStatus(result)
                failed = failed || (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
                PQclear(result)
            }
            let left = deadline - clock.now
            guard left > .zero else {
                throw PostgresError(.connectionFailed, "no answer on the listener connection within \(timeout)")
            }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, max(1, PostgresListener.milliseconds(left))) < 0 && errno != EINTR {
                throw PostgresError(.connectionFailed, "poll failed on the listener connection")
            }
        }
    }

    private static func takeNotifications(_ handle: OpaquePointer) -> [String] {
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }
}
