import Foundation
import Synchronization

/// One request's state across libmicrohttpd's calls. The body is written only on the
/// libmicrohttpd thread before dispatch; the response crosses from the handler's task under a lock.
final class RequestState: @unchecked Sendable {
    /// Filled in when the head has arrived (`headSeen`); the body is appended as it arrives.
    var request = HTTPRequest(method: "", path: "/")
    var headSeen = false
    var tooLarge = false
    /// The raw request line held `%00` (see `HTTPServer.requestLineArrived`).
    var encodesNUL = false
    /// The request target exactly as the request line carried it (path and query, undecoded).
    var rawTarget: String?
    var dispatched = false
    /// The connection's receive deadline (nil only if libmicrohttpd gave no socket context).
    let watch: ConnectionWatch?
    private let lock = NSLock()
    private var response: HTTPResponse?

    init(watch: ConnectionWatch?) { self.watch = watch }

    func store(_ response: HTTPResponse) {
        lock.lock(); self.response = response; lock.unlock()
    }

    func takeResponse() -> HTTPResponse? {
        lock.lock(); defer { lock.unlock() }
        let taken = response
        response = nil
        return taken
    }
}

/// The in-flight count and the draining flag, shared by every libmicrohttpd thread.
final class ServerState: Sendable {
    private struct Counts {
        var inFlight = 0
        var draining = false
        /// No request may be suspended any more: the daemon is being stopped.
        var closed = false
    }

    private let counts = Mutex(Counts())

    var inFlight: Int { counts.withLock { $0.inFlight } }
    var isDraining: Bool { counts.withLock { $0.draining } }
    /// Counts a request in flight, or refuses it once the server is closed: a connection
    /// suspended after `closeIfIdle()` would make libmicrohttpd abort in MHD_stop_daemon.
    func tryStart() -> Bool {
        counts.withLock { counts in
            guard !counts.closed else { return false }
            counts.inFlight += 1
            return true
        }
    }
    func finished() { counts.withLock { $0.inFlight -= 1 } }
    func beginDraining() { counts.withLock { $0.draining = true } }
    /// Closes the server if nothing is in flight; checked and set at once, so no request can be
    /// dispatched between the check and the stop.
    func closeIfIdle() -> Bool {
        counts.withLock { counts in
            guard counts.inFlight == 0 else { return false }
            counts.closed = true
            return true
        }
    }
}
