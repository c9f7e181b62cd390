import CMicroHTTPD
import CShims
public import Foundation

/// An HTTP/1.1 server on GNU libmicrohttpd: epoll with a pool of threads, each request's body
/// collected on the libmicrohttpd thread, then the connection suspended while the async Swift
/// responder runs, and resumed to send the response.
public final class HTTPServer: @unchecked Sendable {
    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        /// 0 picks a free port; read `port` after `start()`.
        public var port: Int = 8080
        public var threadCount: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
        /// Idle connections (and stalled uploads) are closed after this many seconds.
        public var connectionTimeoutSeconds: Int = 30
        public var connectionLimit: Int = 10_000
        /// Larger request bodies get 413.
        public var maxBodyBytes: Int = 1 << 20

        public init(host: String = "127.0.0.1", port: Int = 8080) {
            self.host = host
            self.port = port
        }
    }

    public let configuration: Configuration
    let responder: Responder
    private var daemon: OpaquePointer?
    private var listenSocket: Int32 = -1
    private let state = ServerState()

    public init(configuration: Configuration, responder: Responder) {
        self.configuration = configuration
        self.responder = responder
    }

    /// The port actually bound (useful with port 0).
    public private(set) var port: Int = 0

    public var inFlightRequests: Int { state.inFlight }

    public func start() throws {
        precondition(daemon == nil, "server already started")
        var address = try SocketAddress(host: configuration.host, port: configuration.port)
        var flags = MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue | MHD_USE_ITC.rawValue
        if address.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        let context = Unmanaged.passUnretained(self).toOpaque()  // the server outlives its daemon (stop() in shutdown)
        let threads = UInt32(configuration.threadCount)
        let timeout = UInt32(configuration.connectionTimeoutSeconds)
        let limit = UInt32(configuration.connectionLimit)
        daemon = address.withSockaddr { sockaddrPointer in
            Self.startDaemon(flags: UInt32(flags), address: sockaddrPointer, threads: threads, timeout: timeout,
                             limit: limit, context: context)
        }
        guard let daemon else {
            throw HTTPError(status: 500, code: "BIND_FAILED",
                            message: "cannot listen on \(configuration.host):\(configuration.port) (address in use or not available)")
        }
        port = Int(rg_mhd_bound_port(daemon))
    }

    private static func startDaemon(flags: UInt32, address: UnsafePointer<sockaddr>, threads: UInt32, timeout: UInt32,
                                    limit: UInt32, context: UnsafeMutableRawPointer) -> OpaquePointer? {
        var settings = rg_mhd_settings()
        settings.flags = flags
        settings.bind_address = address
        settings.thread_pool_size = threads
        settings.connection_timeout_seconds = timeout
        settings.connection_limit = limit
        settings.connection_memory_limit = 64 * 1024
        return rg_mhd_start(&settings, mhdAccessHandler, context, mhdRequestCompleted, context)
    }

    /// Stops accepting connections, lets in-flight requests finish (for at most `gracePeriod`
    /// beyond the responder's own handler deadline), then closes everything.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        guard let daemon else { return }
        state.beginDraining()
        listenSocket = MHD_quiesce_daemon(daemon)
        let deadline = ContinuousClock.now + gracePeriod + responder.handlerTimeout
        // Suspended connections must be resumed before MHD_stop_daemon; the responder's deadline
        // guarantees every dispatched request completes, so waiting for zero is bounded.
        while state.inFlight > 0 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        MHD_stop_daemon(daemon)
        if listenSocket >= 0 { close(listenSocket) }
        self.daemon = nil
    }

    // MARK: - Request lifecycle (called on libmicrohttpd threads)

    fileprivate func handle(connection: OpaquePointer, url: String, method: String, upload: UnsafePointer<CChar>?,
                            uploadSize: UnsafeMutablePointer<Int>, requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let existing = requestContext.pointee else {
            // First call for this request: headers are complete, no body has been read yet.
            let request = RequestState(request: Self.readHead(connection: connection, url: url, method: method))
            requestContext.pointee = Unmanaged.passRetained(request).toOpaque()  // released in requestCompleted
            if let declared = request.request.headers["Content-Length"].flatMap(Int.init), declared > configuration.maxBodyBytes {
                // Answer before reading a byte of the body: libmicrohttpd then closes the connection.
                request.tooLarge = true
                return queue(payloadTooLarge(for: request), on: connection)
            }
            return MHD_Result.YES
        }
        let request = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()

        if uploadSize.pointee > 0 {
            if !request.tooLarge, let upload {
                if request.request.body.count + uploadSize.pointee > configuration.maxBodyBytes {
                    request.tooLarge = true
                    request.request.body = Data()
                } else {
                    request.request.body.append(UnsafeRawPointer(upload).assumingMemoryBound(to: UInt8.self), count: uploadSize.pointee)
                }
            }
            uploadSize.pointee = 0  // consumed (or discarded when too large)
            return MHD_Result.YES
        }

        if let response = request.takeResponse() {
            return queue(response, on: connection)
        }
        if request.tooLarge {
            return queue(payloadTooLarge(for: request), on: connection)
        }
        guard !request.dispatched else { return MHD_Result.YES }  // spurious call while the handler runs
        request.dispatched = true
        state.started()
        MHD_suspend_connection(connection)
        let responder = self.responder
        let connectionAddress = UInt(bitPattern: connection)
        Task {
            let response = await responder.respond(to: request.request)
            request.store(response)
            // Resuming makes libmicrohttpd call `handle` again, which queues the stored response.
            // The request stays in flight until libmicrohttpd reports it sent (requestCompleted).
            MHD_resume_connection(OpaquePointer(bitPattern: connectionAddress))
        }
        return MHD_Result.YES
    }

    private func payloadTooLarge(for request: RequestState) -> HTTPResponse {
        var response = HTTPError(status: 413, code: "PAYLOAD_TOO_LARGE",
                                 message: "request body is larger than \(configuration.maxBodyBytes) bytes").response
        response.headers.replace("X-Request-Id", Responder.requestID(from: request.request.headers["X-Request-Id"]))
        response.headers.replace("Connection", "close")
        return response
    }

    private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        let created = response.body.withUnsafeBytes { raw in
            MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse = created else { return MHD_Result.NO }
        defer { MHD_destroy_response(mhdResponse) }
        for field in response.headers {
            _ = MHD_add_response_header(mhdResponse, field.name, field.value)
        }
        if state.isDraining {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
    }

    private static func readHead(connection: OpaquePointer, url: String, method: String) -> HTTPRequest {
        let collector = ValueCollector()
        let context = Unmanaged.passUnretained(collector).toOpaque()
        withExtendedLifetime(collector) {
            _ = MHD_get_connection_values(connection, .HEADER_KIND, collectValue, context)
            collector.collectingQuery = true
            _ = MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, collectValue, context)
        }
        var addressBuffer = [CChar](repeating: 0, count: 64)
        let remote = rg_mhd_client_address(connection, &addressBuffer, addressBuffer.count) == 0
            ? String(decoding: addressBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : nil
        return HTTPRequest(method: method, path: url, query: collector.query, headers: collector.headers, remoteAddress: remote)
    }

    /// libmicrohttpd is done with the request (response sent, or the connection failed):
    /// release the state retained in `handle` and, if a handler ran, leave the in-flight count.
    fileprivate func requestCompleted(_ requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let requestContext, let pointer = requestContext.pointee else { return }
        let request = Unmanaged<RequestState>.fromOpaque(pointer)
        if request.takeUnretainedValue().dispatched { state.finished() }
        request.release()
        requestContext.pointee = nil
    }
}

// MARK: - C callbacks

private let mhdAccessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, upload, uploadSize, requestContext in
    guard let context, let connection, let uploadSize, let requestContext else { return MHD_Result.NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    return server.handle(connection: connection, url: url.map { String(cString: $0) } ?? "/",
                         method: method.map { String(cString: $0) } ?? "GET", upload: upload,
                         uploadSize: uploadSize, requestContext: requestContext)
}

private let mhdRequestCompleted: MHD_RequestCompletedCallback = { context, _, requestContext, _ in
    guard let context else { return }
    Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().requestCompleted(requestContext)
}

private let collectValue: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return MHD_Result.YES }
    let collector = Unmanaged<ValueCollector>.fromOpaque(context).takeUnretainedValue()
    let name = String(cString: key), text = value.map { String(cString: $0) } ?? ""
    if collector.collectingQuery {
        if collector.query[name] == nil { collector.query[name] = text }
    } else {
        collector.headers.add(name, text)
    }
    return MHD_Result.YES
}

private final class ValueCollector {
    var headers = HTTPHeaders()
    var query: [String: String] = [:]
    var collectingQuery = false
}

/// One request's state across libmicrohttpd's calls. The body is written only on the
/// libmicrohttpd thread before dispatch; the response crosses from the handler's task under a lock.
private final class RequestState: @unchecked Sendable {
    var request: HTTPRequest
    var tooLarge = false
    var dispatched = false
    private let lock = NSLock()
    private var response: HTTPResponse?

    init(request: HTTPRequest) { self.request = request }

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

private final class ServerState: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var draining = false

    var inFlight: Int { lock.lock(); defer { lock.unlock() }; return count }
    var isDraining: Bool { lock.lock(); defer { lock.unlock() }; return draining }
    func started() { lock.lock(); count += 1; lock.unlock() }
    func finished() { lock.lock(); count -= 1; lock.unlock() }
    func beginDraining() { lock.lock(); draining = true; lock.unlock() }
}

/// An IPv4 or IPv6 socket address built from text.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let isIPv6: Bool

    init(host: String, port: Int) throws {
        guard (0...65_535).contains(port) else {
            throw HTTPError(status: 500, code: "BIND_FAILED", message: "port \(port) is out of range")
        }
        if host.contains(":") {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else {
                throw HTTPError(status: 500, code: "BIND_FAILED", message: "\(host) is not an IPv6 address")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in6.self) }
            isIPv6 = true
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            let text = host == "localhost" ? "127.0.0.1" : host
            guard inet_pton(AF_INET, text, &address.sin_addr) == 1 else {
                throw HTTPError(status: 500, code: "BIND_FAILED", message: "\(host) is not an IPv4 address")
            }
            withUnsafeMutableBytes(of: &storage) { $0.storeBytes(of: address, as: sockaddr_in.self) }
            isIPv6 = false
        }
    }

    mutating func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>) -> T) -> T {
        withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0) }
        }
    }
}
