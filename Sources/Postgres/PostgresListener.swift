import CLibPQ
import Foundation

/// A connection of its own that `LISTEN`s on one channel and hands each notification's payload
/// to `onNotification`, on a thread it owns. When the connection is lost it calls `onLost` at
/// once, reconnects with a growing delay, and calls `onListening` once `LISTEN` is in place again:
/// whoever caches on the strength of these notifications must stop trusting its cache from
/// `onLost` until `onListening`, since notifications sent in between are gone.
public final class PostgresListener: @unchecked Sendable {
    public struct Callbacks: Sendable {
        public var onListening: @Sendable () -> Void
        public var onLost: @Sendable () -> Void
        public var onNotification: @Sendable (String) -> Void

        public init(onListening: @escaping @Sendable () -> Void, onLost: @escaping @Sendable () -> Void,
                    onNotification: @escaping @Sendable (String) -> Void) {
            self.onListening = onListening
            self.onLost = onLost
            self.onNotification = onNotification
        }
    }

    private let connectionString: String
    private let channel: String
    private let callbacks: Callbacks
    private let lock = NSLock()
    private var stopped = false  // guarded by lock

    /// `channel` is program text (an identifier), never input.
    public init(connectionString: String, channel: String, callbacks: Callbacks) {
        precondition(channel.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }, "channel must be an identifier")
        self.connectionString = connectionString
        self.channel = channel
        self.callbacks = callbacks
    }

    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "postgres-listen"
        thread.start()
    }

    /// The thread notices within a second and closes its connection.
    public func stop() {
        lock.withLock { stopped = true }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func run() {
        var delay = 0.05
        while !isStopped {
            do {
                let connection = try PostgresConnection(connectionString: connectionString, connectTimeoutSeconds: 5,
                                                        statementTimeoutMilliseconds: 10_000)
                try connection.executeScript("LISTEN \(channel)")
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

    /// Waits on the socket (one second at a time, to notice `stop`) and delivers notifications
    /// until the connection fails.
    private func listen(on connection: PostgresConnection) throws {
        while !isStopped {
            let payloads = try connection.waitForNotifications(timeoutMilliseconds: 1000)
            for payload in payloads { callbacks.onNotification(payload) }
        }
    }
}

extension PostgresConnection {
    /// The payloads of the notifications that arrived within the timeout (possibly none).
    /// Throws when the connection is gone.
    func waitForNotifications(timeoutMilliseconds: Int32) throws -> [String] {
        guard let handle = rawHandle, PQstatus(handle) == CONNECTION_OK else { throw PostgresError(.connectionFailed, "listener connection lost") }
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw PostgresError(.connectionFailed, "listener connection lost") }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, timeoutMilliseconds)
        if ready < 0 && errno != EINTR { throw PostgresError(.connectionFailed, "poll failed on the listener connection") }
        if ready > 0 {
            guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else {
                throw PostgresError(.connectionFailed, "listener connection lost")
            }
        }
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }
}
