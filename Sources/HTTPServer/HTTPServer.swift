import CMicroHTTPD
import CShims
import Foundation
import Synchronization
import Workers

/// An HTTP/1.1 server on GNU libmicrohttpd: epoll with a pool of threads, each request's body
/// collected on the libmicrohttpd thread, then the connection suspended while the async Swift
/// responder runs, and resumed to send the response.
package final class HTTPServer: Sendable {
    package struct Configuration: Sendable {
        package var host: String = "127.0.0.1"
        /// 0 picks a free port; read `port` after `start()`.
        package var port: Int = 8080
        package var threadCount: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
        /// Idle connections (and stalled uploads) are closed after this many seconds of silence.
        package var connectionTimeoutSeconds: Int = 30
        /// A request (head and body) must arrive whole within this many seconds, however steadily
        /// its bytes trickle in; a slower one gets 408 and its connection is closed.
        package var requestReceiveTimeoutSeconds: Int = 30
        /// Open connections at most, all clients together; more are accepted and closed at once.
        /// libmicrohttpd divides it between the threads of its pool.
        package var connectionLimit: Int = 1024
        /// Open connections at most from one IP address; 0 means no per-address limit.
        package var connectionLimitPerIP: Int = 256
        /// Larger request bodies get 413.
        package var maxBodyBytes: Int = 1 << 20

        package init(host: String = "127.0.0.1", port: Int = 8080) {
            self.host = host
            self.port = port
        }
    }

    package let configuration: Configuration
    let responder: Responder
    private let state = ServerState()

    /// Started, and on which port; `start()` and `shutdown()` change it under the lock, so two
    /// shutdowns (a signal and a test's cleanup) stop the daemon once.
    private struct Lifecycle {
        var daemon: Daemon?
        var port = 0
    }

    /// libmicrohttpd's handle: used from any thread (it is thread-safe), stopped only by
    /// whoever took it out of `Lifecycle`.
    private struct Daemon: @unchecked Sendable { let pointer: OpaquePointer }

    private let lifecycle = Mutex(Lifecycle())

    package init(configuration: Configuration, responder: Responder) {
        self.configuration = configuration
        self.responder = responder
    }

    /// The port actually bound (useful with port 0); 0 before `start()`.
    package var port: Int { lifecycle.withLock { $0.port } }

    package var inFlightRequests: Int { state.inFlight }

    package func start() throws {
        try lifecycle.withLock { lifecycle throws in
            precondition(lifecycle.daemon == nil, "server already started")
            let daemon = try startDaemon()
            lifecycle = Lifecycle(daemon: Daemon(pointer: daemon), port: Int(rg_mhd_bound_port(daemon)))
        }
    }

    private func startDaemon() throws -> OpaquePointer {
        var address = try SocketAddress(host: configuration.host, port: configuration.port)
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ITC.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        // The daemon holds the server until `shutdown()` stops it: a server let go while running
        // keeps serving, rather than leaving the daemon's threads a freed context.
        let context = Unmanaged.passRetained(self).toOpaque()
        var settings = rg_mhd_settings()
        settings.flags = UInt32(flags)
        settings.thread_pool_size = UInt32(configuration.threadCount)
        settings.connection_timeout_seconds = UInt32(configuration.connectionTimeoutSeconds)
        settings.connection_limit = UInt32(configuration.connectionLimit)
        settings.per_ip_connection_limit = UInt32(configuration.connectionLimitPerIP)
        // libmicrohttpd zeroes a connection's whole memory pool before each keep-alive request, so
        // its size is paid per request: 16 KB holds any head we accept (8 KB of headers and more) and
        // a body is read through it in pieces whatever its size.
        settings.connection_memory_limit = 16 * 1024
        settings.notify_connection = mhdNotifyConnection
        settings.notify_connection_context = context
        settings.uri_log = mhdRequestLineArrived
        settings.uri_log_context = context
        let daemon = address.withSockaddr { sockaddrPointer in
            settings.bind_address = sockaddrPointer
            return rg_mhd_start(&settings, mhdAccessHandler, context, mhdRequestCompleted, context)
        }
        guard let daemon else {
            Unmanaged.passUnretained(self).release()
            throw HTTPError(
                status: 500, code: "BIND_FAILED",
                message:
                    "cannot listen on \(configuration.host):\(configuration.port) (address in use or not available)")
        }
        return daemon
    }

    /// Stops accepting connections, lets in-flight requests finish (for at most `gracePeriod`
    /// beyond the responder's own handler deadline), then closes everything. A request still
    /// running then (work outside the handler's deadline) keeps the daemon until it ends: the
    /// daemon is stopped only with no connection suspended, as libmicrohttpd requires.
    package func shutdown(gracePeriod: Duration = .seconds(10)) async {
        let taken = lifecycle.withLock { lifecycle -> Daemon? in
            defer { lifecycle.daemon = nil }
            return lifecycle.daemon
        }
        guard let daemon = taken else { return }
        state.beginDraining()
        // Closed only after MHD_stop_daemon: the pool's threads take the socket out of their epoll
        // sets on their own time, and libmicrohttpd aborts if it is gone before they have.
        let listenSocket = MHD_quiesce_daemon(daemon.pointer)
        let deadline = ContinuousClock.now + gracePeriod + responder.handlerTimeout
        if await stopWhenIdle(daemon, listenSocket: listenSocket, before: deadline) { return }
        Task.detached { [self] in _ = await stopWhenIdle(daemon, listenSocket: listenSocket, before: nil) }
    }

    /// Stops the daemon once nothing is in flight, then closes the listening socket; false if
    /// `deadline` came first.
    private func stopWhenIdle(
        _ daemon: Daemon, listenSocket: Int32, before deadline: ContinuousClock.Instant?
    ) async -> Bool {
        while !state.closeIfIdle() {
            if let deadline, ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        // Joins the daemon's threads: a wait, on a thread of its own rather than the cooperative
        // pool; in a task of its own, so a cancelled caller still stops the daemon (here, at worst).
        let stopped =
            (try? await Task { try await SharedWorkers.waits.run { MHD_stop_daemon(daemon.pointer) } }.value) != nil
        if !stopped { MHD_stop_daemon(daemon.pointer) }
        if listenSocket >= 0 { close(listenSocket) }
        Unmanaged.passUnretained(self).release()  // the daemon's hold, taken in start()
        return true
    }

    var receiveTimeout: Duration { .seconds(configuration.requestReceiveTimeoutSeconds) }

    var isDraining: Bool { state.isDraining }

    func requestStarted() -> Bool { state.tryStart() }

    func requestFinished() { state.finished() }
}
