import Foundation

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
final class ServerState: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var draining = false

    var inFlight: Int { lock.lock(); defer { lock.unlock() }; return count }
    var isDraining: Bool { lock.lock(); defer { lock.unlock() }; return draining }
    func started() { lock.lock(); count += 1; lock.unlock() }
    func finished() { lock.lock(); count -= 1; lock.unlock() }
    func beginDraining() { lock.lock(); draining = true; lock.unlock() }
}
